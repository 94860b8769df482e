/** A CRD written by hand without status.observedGeneration: the runtime says what to fix, once. */
import { expect } from "expect";
import { KubeClient } from "../kube/client.ts";
import type { Unstructured } from "../kube/object.ts";
import { EVENT, NAMESPACE } from "../kube/kinds.ts";
import type { Resource } from "../kube/resource.ts";
import { Manager } from "../runtime/manager/mod.ts";
import { definePlugin } from "../runtime/plugin/mod.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";

const BARE: Resource = {
  group: "test.ptemplate.dev",
  version: "v1",
  kind: "Bare",
  plural: "bares",
  namespaced: true,
};

const BARE_CRD: Unstructured = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "bares.test.ptemplate.dev" },
  spec: {
    group: BARE.group,
    names: { kind: "Bare", plural: "bares" },
    scope: "Namespaced",
    versions: [{
      name: "v1",
      served: true,
      storage: true,
      subresources: { status: {} },
      schema: {
        openAPIV3Schema: {
          type: "object",
          properties: {
            spec: { type: "object" },
            // No observedGeneration here: the mistake under test.
            status: { type: "object", properties: { ready: { type: "boolean" } } },
          },
        },
      },
    }],
  },
};

const barePlugin = definePlugin({
  name: "bare",
  for: BARE,
  reconcile: () => ({ status: { ready: true } }),
});

await integrationTest("a status the CRD does not declare is a permanent, explained error", {
  crds: [BARE_CRD],
}, async (plane, step) => {
  const admin = plane.client();
  await admin.create(NAMESPACE, { metadata: { name: "bare" } });
  const client = new KubeClient(plane.adminConfig);
  const manager = new Manager({ client, plugins: [barePlugin] });
  const stop = new AbortController();
  const running = manager.run(stop.signal);
  const errors = () =>
    Number(
      manager.registry.render().match(
        /controller_runtime_reconcile_errors_total\{controller="bare"\} (\d+)/,
      )?.[1],
    );
  try {
    await step("a Warning Event names the fix, and the reconcile is not retried", async () => {
      await admin.create(BARE, { metadata: { name: "b", namespace: "bare" }, spec: {} });
      const event = await eventually(async () => {
        const events = await admin.list(EVENT, { namespace: "bare" });
        const found = events.items.find((e) => e.reason === "StatusSchemaMismatch");
        expect(found).toBeDefined();
        return found!;
      });
      expect(event.type).toBe("Warning");
      expect(event.message).toContain("observedGeneration (integer)");
      const after = errors();
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(errors()).toBe(after);
    });
  } finally {
    stop.abort();
    await running;
    client.close();
  }
});
