/**
 * /healthz tells the truth about the controllers: one whose workers die (here: a plugin made
 * without definePlugin, with a concurrency no process can have) fails the probe within one
 * kubelet probe period, while the other plugins keep working.
 */
import { expect } from "expect";
import { KubeClient } from "../kube/client.ts";
import { CONFIG_MAP, NAMESPACE } from "../kube/kinds.ts";
import { Manager } from "../runtime/manager/mod.ts";
import type { Plugin } from "../runtime/plugin/mod.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { CONFIG_SET, CONFIG_SET_CRD, configSetPlugin } from "./fixtures/config_set.ts";

/** The kubelet's default periodSeconds for a liveness probe. */
const PROBE_PERIOD_MS = 10_000;

await integrationTest("a controller whose workers die fails /healthz", {
  crds: [CONFIG_SET_CRD],
}, async (plane, step) => {
  const admin = plane.client();
  await admin.create(NAMESPACE, { metadata: { name: "health" } });
  // What definePlugin would have refused: a concurrency of 2^32 workers.
  const runaway: Plugin = Object.freeze({
    ...configSetPlugin,
    name: "runaway",
    concurrency: 2 ** 32,
  });
  const client = new KubeClient(plane.adminConfig);
  const manager = new Manager({
    client,
    plugins: [configSetPlugin, runaway],
    healthBind: { hostname: "127.0.0.1", port: 0 },
  });
  const stop = new AbortController();
  const running = manager.run(stop.signal);
  const probe = async (path: string) => {
    const response = await fetch(`http://127.0.0.1:${manager.endpoints.healthPort}${path}`);
    return { status: response.status, body: await response.text() };
  };
  try {
    await step("/healthz fails within one probe period, naming the controller", async () => {
      await eventually(async () => expect((await probe("/readyz")).status).toBe(200));
      const since = Date.now();
      const healthz = await eventually(async () => {
        const healthz = await probe("/healthz?verbose");
        expect(healthz.status).toBe(500);
        return healthz;
      }, { timeoutMs: PROBE_PERIOD_MS });
      console.error(`    /healthz failed ${Date.now() - since} ms after the caches synced`);
      expect(healthz.body).toMatch(/^\[-\]controllers failed: runaway: /m);
    });

    await step("the other plugins keep working", async () => {
      await admin.create(CONFIG_SET, {
        metadata: { name: "still", namespace: "health" },
        spec: { entries: { k: "v" } },
      });
      await eventually(async () =>
        expect((await admin.get(CONFIG_MAP, "still-k", { namespace: "health" })).data)
          .toEqual({ value: "v" })
      );
    });
  } finally {
    stop.abort();
    await running;
    client.close();
  }
});
