/** Shows the test control plane is a real Kubernetes: versions, validation, RBAC, scheduling, GC, cleanup. */
import { expect } from "expect";
import type { Unstructured } from "../kube/object.ts";
import { ApiError } from "../kube/errors.ts";
import { CONFIG_MAP, DAEMON_SET, NAMESPACE, POD, ROLE, ROLE_BINDING } from "../kube/kinds.ts";
import type { Resource } from "../kube/resource.ts";
import { KUBERNETES_VERSION } from "../testing/binaries.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { liveGroupMembers } from "../testing/process.ts";
import { eventually } from "../testing/eventually.ts";

const WIDGET_CRD: Unstructured = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "widgets.test.ptemplate.dev" },
  spec: {
    group: "test.ptemplate.dev",
    names: { kind: "Widget", plural: "widgets", singular: "widget", listKind: "WidgetList" },
    scope: "Namespaced",
    versions: [{
      name: "v1",
      served: true,
      storage: true,
      schema: {
        openAPIV3Schema: {
          type: "object",
          properties: {
            spec: {
              type: "object",
              properties: { size: { type: "integer", minimum: 1 } },
            },
          },
        },
      },
    }],
  },
};
const WIDGET: Resource = {
  group: "test.ptemplate.dev",
  version: "v1",
  kind: "Widget",
  plural: "widgets",
  namespaced: true,
};

await integrationTest("control plane: a real Kubernetes", {
  controllerManager: true,
  scheduler: true,
  kwok: true,
}, async (plane, step) => {
  const admin = plane.client();

  await step("/version reports the pinned Kubernetes version", async () => {
    const version = await admin.request<{ gitVersion: string }>("GET", "/version");
    expect(version.gitVersion).toBe(KUBERNETES_VERSION);
  });

  await step("a namespace is created and read back", async () => {
    await admin.create(NAMESPACE, { metadata: { name: "foundation", labels: { a: "b" } } });
    const read = await admin.get(NAMESPACE, "foundation");
    expect(read.metadata?.labels).toMatchObject({ a: "b" });
    expect(read.metadata?.uid).toBeTruthy();
  });

  await step(
    "a CRD becomes Established; a schema violation is a 422 naming the field",
    async () => {
      expect(await plane.installCrds(WIDGET_CRD)).toEqual(["widgets.test.ptemplate.dev"]);
      await admin.create(WIDGET, {
        metadata: { name: "ok", namespace: "foundation" },
        spec: { size: 2 },
      });
      const error = await admin.create(WIDGET, {
        metadata: { name: "bad", namespace: "foundation" },
        spec: { size: 0 },
      }).catch((e) => e);
      expect(error).toBeInstanceOf(ApiError);
      expect(error.code).toBe(422);
      expect(error.reason).toBe("Invalid");
      expect(error.causes.map((c: { field?: string }) => c.field)).toContain("spec.size");
    },
  );

  await step("a ServiceAccount gets 403 until a Role and RoleBinding grant it", async () => {
    const identity = await plane.serviceAccountIdentity("foundation", "reader");
    const reader = plane.clientFor(identity.config);
    const denied = await reader.list(CONFIG_MAP, { namespace: "foundation" }).catch((e) => e);
    expect(denied).toBeInstanceOf(ApiError);
    expect(denied.code).toBe(403);
    expect(denied.reason).toBe("Forbidden");
    await admin.create(ROLE, {
      metadata: { name: "read-configmaps", namespace: "foundation" },
      rules: [{ apiGroups: [""], resources: ["configmaps"], verbs: ["list"] }],
    });
    await admin.create(ROLE_BINDING, {
      metadata: { name: "reader", namespace: "foundation" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "read-configmaps" },
      subjects: [{ kind: "ServiceAccount", name: "reader", namespace: "foundation" }],
    });
    // RBAC is evaluated from the API server's informer cache: allow it a moment.
    const list = await eventually(() => reader.list(CONFIG_MAP, { namespace: "foundation" }));
    expect(Array.isArray(list.items)).toBe(true);
  });

  await step("a DaemonSet selecting a kwok node gets a Running pod on it", async () => {
    await plane.createNodes({
      name: "worker-1",
      labels: { "node-role.kubernetes.io/worker": "worker" },
    });
    await plane.createNodes({ name: "other-1" });
    await admin.create(DAEMON_SET, {
      metadata: { name: "probe", namespace: "foundation" },
      spec: {
        selector: { matchLabels: { app: "probe" } },
        template: {
          metadata: { labels: { app: "probe" } },
          spec: {
            nodeSelector: { "node-role.kubernetes.io/worker": "worker" },
            containers: [{ name: "probe", image: "example.invalid/probe:1" }],
          },
        },
      },
    });
    const pod = await eventually(async () => {
      const pods = await admin.list(POD, {
        namespace: "foundation",
        labelSelector: "app=probe",
      });
      expect(pods.items).toHaveLength(1);
      expect(pods.items[0].status?.phase).toBe("Running");
      return pods.items[0];
    }, { timeoutMs: 60_000 });
    expect(pod.spec?.nodeName).toBe("worker-1");
  });

  await step("deleting an owner garbage-collects its dependent", async () => {
    const owner = await admin.create(CONFIG_MAP, {
      metadata: { name: "owner", namespace: "foundation" },
    });
    await admin.create(CONFIG_MAP, {
      metadata: {
        name: "dependent",
        namespace: "foundation",
        ownerReferences: [{
          apiVersion: "v1",
          kind: "ConfigMap",
          name: "owner",
          uid: owner.metadata!.uid!,
        }],
      },
    });
    await admin.delete(CONFIG_MAP, "owner", { namespace: "foundation" });
    await eventually(async () => {
      const gone = await admin.get(CONFIG_MAP, "dependent", { namespace: "foundation" })
        .catch((e) => e);
      expect(gone).toBeInstanceOf(ApiError);
      expect(gone.code).toBe(404);
    }, { timeoutMs: 60_000 });
  });
});

await integrationTest("control plane: stop leaves no process behind", {
  controllerManager: true,
  scheduler: true,
  kwok: true,
}, async (plane) => {
  const pids = plane.pids();
  expect(pids).toHaveLength(5);
  for (const pid of pids) expect(await liveGroupMembers(pid)).toContain(pid);
  // A second stop (a second Ctrl-C) is the same stop: it ends only when everything has.
  const first = plane.stop();
  const again = plane.stop();
  expect(again).toBe(first);
  await again;
  for (const pid of pids) {
    expect(await liveGroupMembers(pid)).toEqual([]);
  }
});
