import { expect } from "expect";
import type { KubeClient } from "../../kube/client.ts";
import { CONFIG_MAP } from "../../kube/kinds.ts";
import { createServingPki } from "../../testing/control_plane_pki.ts";
import { log, Registry } from "../observe/mod.ts";
import { definePlugin } from "../plugin/mod.ts";
import { Store } from "../cache/mod.ts";
import { WebhookServer } from "./webhook_server.ts";

const plugin = definePlugin({
  name: "labeller",
  for: CONFIG_MAP,
  reconcile: () => {},
  default: (cm) => ({ ...cm, metadata: { ...cm.metadata, labels: { team: "default" } } }),
  validate: ({ object }) =>
    object?.data?.forbidden
      ? { denied: "data.forbidden: remove it; this key is never allowed" }
      : { warnings: ["data has no owner: add data.owner"] },
});

Deno.test("admission: defaulting answers a JSON patch, validation warnings and refusals", async () => {
  const pki = await createServingPki();
  const serving = await pki.issue();
  const registry = new Registry();
  const server = new WebhookServer({
    bind: { hostname: "127.0.0.1", port: 0 },
    plugins: [plugin],
    certificate: () => Promise.resolve(serving),
    registry,
    context: {
      client: {} as KubeClient,
      cache: (resource) => new Store(resource),
      installed: () => true,
      log: log("test"),
    },
    log: log("test"),
  });
  await server.start();
  const client = Deno.createHttpClient({ caCerts: [pki.ca.cert] });
  try {
    const review = async (path: string, object: unknown) => {
      const response = await fetch(`https://127.0.0.1:${server.port}${path}`, {
        method: "POST",
        body: JSON.stringify({
          apiVersion: "admission.k8s.io/v1",
          kind: "AdmissionReview",
          request: {
            uid: "u1",
            operation: "CREATE",
            namespace: "n",
            resource: { group: "", version: "v1", resource: "configmaps" },
            object,
          },
        }),
        client,
      });
      return (await response.json()).response;
    };
    const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" }, data: { a: "b" } };
    const mutated = await review("/mutate/labeller", cm);
    expect(mutated).toMatchObject({ uid: "u1", allowed: true, patchType: "JSONPatch" });
    expect(JSON.parse(atob(mutated.patch))).toEqual([
      { op: "replace", path: "/metadata", value: { name: "c", labels: { team: "default" } } },
    ]);
    expect(await review("/validate/labeller", cm)).toEqual({
      uid: "u1",
      allowed: true,
      warnings: ["data has no owner: add data.owner"],
    });
    expect(await review("/validate/labeller", { ...cm, data: { forbidden: "x" } })).toMatchObject({
      allowed: false,
      status: { code: 422, message: "data.forbidden: remove it; this key is never allowed" },
    });
    const missing = await fetch(`https://127.0.0.1:${server.port}/validate/nobody`, {
      method: "POST",
      body: "{}",
      client,
    });
    expect(missing.status).toBe(404);
    await missing.body?.cancel();
    // Whatever a caller puts in the path, nothing is counted for it.
    expect([...server.answered.keys()].some((k) => k.includes("nobody"))).toBe(false);
    const empty = await fetch(`https://127.0.0.1:${server.port}/validate/labeller`, {
      method: "POST",
      body: "{}",
      client,
    });
    expect(empty.status).toBe(400);
    expect(await empty.text()).toBe(
      "/validate/labeller takes an AdmissionReview (admission.k8s.io/v1), not something else\n",
    );
    expect(server.problem).toBeUndefined();
    // controller-runtime's webhook metrics, by route: a denial is an answer (200), a review that
    // is not one is not; the caller's made-up path is nowhere.
    const metrics = registry.render();
    const series = (name: string) =>
      [...metrics.matchAll(new RegExp(`^${name}(\\{[^}]*\\})? (\\S+)$`, "gm"))]
        .map(([, labels, value]) => `${labels} ${value}`);
    expect(series("controller_runtime_webhook_requests_total")).toEqual([
      '{webhook="/mutate/labeller",code="200"} 1',
      '{webhook="/validate/labeller",code="200"} 2',
      '{webhook="/validate/labeller",code="400"} 1',
    ]);
    expect(series("controller_runtime_webhook_latency_seconds_count")).toEqual([
      '{webhook="/mutate/labeller"} 1',
      '{webhook="/validate/labeller"} 3',
    ]);
    expect(series("controller_runtime_webhook_requests_in_flight")).toEqual([
      '{webhook="/convert"} 0',
      '{webhook="/mutate/labeller"} 0',
      '{webhook="/validate/labeller"} 0',
    ]);
    expect(metrics).not.toContain("nobody");
    const expiry = series("serving_certificate_expiration_timestamp_seconds");
    expect(expiry).toEqual([expect.stringMatching(/^\{server="webhooks"\} \d{10}$/)]);
  } finally {
    client.close();
    await server.stop();
  }
});

Deno.test("without a certificate the server says why, and serves once one comes", async () => {
  const pki = await createServingPki();
  let certificate: { cert: string; key: string } | undefined;
  const server = new WebhookServer({
    bind: { hostname: "127.0.0.1", port: 0 },
    plugins: [plugin],
    certificate: () => Promise.resolve(certificate),
    context: {
      client: {} as KubeClient,
      cache: (resource) => new Store(resource),
      installed: () => true,
      log: log("t"),
    },
    log: log("t"),
  });
  await server.start();
  try {
    expect(server.problem).toBe("no serving certificate yet");
    certificate = await pki.issue();
    await server.refresh();
    expect(server.problem).toBeUndefined();
  } finally {
    await server.stop();
  }
});

Deno.test("a default that changes its object in place is not lost", async () => {
  const pki = await createServingPki();
  const serving = await pki.issue();
  const inPlace = definePlugin({
    name: "in-place",
    for: CONFIG_MAP,
    reconcile: () => {},
    default: (cm) => void (cm.data = { ...cm.data, filled: "yes" }),
  });
  const server = new WebhookServer({
    bind: { hostname: "127.0.0.1", port: 0 },
    plugins: [inPlace],
    certificate: () => Promise.resolve(serving),
    context: {
      client: {} as KubeClient,
      cache: (resource) => new Store(resource),
      installed: () => true,
      log: log("t"),
    },
    log: log("t"),
  });
  await server.start();
  const client = Deno.createHttpClient({ caCerts: [pki.ca.cert] });
  try {
    const response = await fetch(`https://127.0.0.1:${server.port}/mutate/in-place`, {
      method: "POST",
      body: JSON.stringify({
        apiVersion: "admission.k8s.io/v1",
        kind: "AdmissionReview",
        request: {
          uid: "u",
          operation: "CREATE",
          namespace: "n",
          resource: { group: "", version: "v1", resource: "configmaps" },
          object: {
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name: "c" },
            data: { a: "b" },
          },
        },
      }),
      client,
    });
    const { response: answer } = await response.json();
    expect(JSON.parse(atob(answer.patch))).toEqual([
      { op: "replace", path: "/data", value: { a: "b", filled: "yes" } },
    ]);
  } finally {
    client.close();
    await server.stop();
  }
});
