import { expect } from "expect";
import { KubeClient } from "../../kube/client.ts";
import { CONFIG_MAP } from "../../kube/kinds.ts";
import { StartupError } from "../../util/startup_error.ts";
import { eventually } from "../../testing/eventually.ts";
import { Manager } from "./manager.ts";
import { definePlugin } from "../plugin/mod.ts";

/** A port on loopback that nothing listens on (now). */
function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** A client of an API server that is not there. */
function nowhere(): KubeClient {
  return new KubeClient({
    server: `https://127.0.0.1:${freePort()}`,
    namespace: "default",
    source: "manager_test",
  }, { maxRetries: 0 });
}

const plugin = (name: string) => definePlugin({ name, for: CONFIG_MAP, reconcile: () => {} });

Deno.test("a manager refuses what can never run: a bad concurrency, two plugins of one name", () => {
  const client = nowhere();
  try {
    expect(() => new Manager({ client, plugins: [], concurrency: 0 })).toThrow(RangeError);
    expect(() => new Manager({ client, plugins: [plugin("a"), plugin("a")] })).toThrow(
      'two plugins are named "a"',
    );
  } finally {
    client.close();
  }
});

Deno.test("metrics over HTTPS and probes on one port: a StartupError naming both flags", async () => {
  const client = nowhere();
  try {
    const manager = new Manager({
      client,
      plugins: [plugin("a")],
      metricsBind: { hostname: "127.0.0.1", port: 9999, flag: "--metrics-bind-address" },
      healthBind: { hostname: "127.0.0.1", port: 9999, flag: "--health-probe-bind-address" },
      secureMetrics: {},
    });
    const error = await manager.run(new AbortController().signal).catch((e) => e);
    expect(error).toBeInstanceOf(StartupError);
    expect(error.message).toMatch(
      /--metrics-bind-address and --health-probe-bind-address are the same port/,
    );
  } finally {
    client.close();
  }
});

Deno.test("each part brings its probe checks; plain metrics and probes share a port", async () => {
  const client = nowhere();
  const stop = new AbortController();
  const shared = freePort();
  const manager = new Manager({
    client,
    plugins: [plugin("a")],
    metricsBind: { hostname: "127.0.0.1", port: shared },
    healthBind: { hostname: "127.0.0.1", port: shared },
  });
  const running = manager.run(stop.signal);
  try {
    const port = await eventually(() => {
      expect(manager.endpoints.healthPort).toBeGreaterThan(0);
      return manager.endpoints.healthPort!;
    });
    const probe = async (path: string) => {
      const response = await fetch(`http://127.0.0.1:${port}${path}`);
      return { status: response.status, body: await response.text() };
    };
    // Alive, and not leading yet: healthy. The caches cannot list: not ready, saying why.
    expect(await probe("/healthz?verbose")).toEqual({
      status: 200,
      body: "[+]ping ok\n[+]api-server ok\n[+]controllers ok\nhealthz check passed\n",
    });
    const ready = await eventually(async () => {
      const answer = await probe("/readyz?verbose");
      expect(answer.body).toContain("[-]api-server failed: no answer for");
      return answer;
    });
    expect(ready.status).toBe(500);
    expect(ready.body.split("\n").map((line) => line.replace(/ (ok|failed).*/, ""))).toEqual([
      "[-]api-server",
      "[-]informers-synced",
      "[+]kinds-served",
      "readyz check",
      "",
    ]);
    expect(ready.body).toContain("[-]informers-synced failed: waiting for ConfigMap");
    // The metrics are on the same port.
    expect((await probe("/metrics")).body).toContain("rest_client_requests_total");
    expect(manager.endpoints.metricsPort).toBe(shared);
    expect(port).toBe(shared);
  } finally {
    stop.abort();
    await running;
    client.close();
  }
});
