import { expect } from "expect";
import type { KubeObject } from "../../kube/object.ts";
import {
  describeForeign,
  foreignFields,
  type PatchOperation,
  removalPatch,
} from "./foreign_fields.ts";

const OURS = new Set(["consumer-daemonset"]);
const OWNER = { apiVersion: "pt.example.com/v1alpha1", kind: "Ptemplate", name: "p", uid: "p-1" };

/** The pod template of a DaemonSet-shaped object. */
const template = (object: unknown) =>
  (object as {
    spec: { template: { metadata: Record<string, unknown>; spec: Record<string, unknown> } };
  }).spec.template;

/** What we apply: one privileged container with /dev mounted. */
const desired: KubeObject = {
  apiVersion: "apps/v1",
  kind: "DaemonSet",
  metadata: { name: "d", namespace: "ns", labels: { app: "d" }, ownerReferences: [OWNER] },
  spec: {
    selector: { matchLabels: { app: "d" } },
    template: {
      metadata: { labels: { app: "d" } },
      spec: {
        containers: [{
          name: "consumer",
          image: "busybox:1",
          ports: [{ containerPort: 80 }],
          volumeMounts: [{ name: "hostdev", mountPath: "/hostdev" }],
        }],
        volumes: [{ name: "hostdev", hostPath: { path: "/dev" } }],
      },
    },
  },
} as KubeObject;

/** The DaemonSet after `kubectl patch` (a strategic merge) added what the issue lists. */
function tampered(): KubeObject {
  return {
    ...structuredClone(desired),
    metadata: {
      name: "d",
      namespace: "ns",
      uid: "uid-1",
      labels: { app: "d", extra: "label" },
      annotations: { "deprecated.daemonset.template.generation": "2" },
      managedFields: [
        { manager: "consumer-daemonset", operation: "Apply" },
        { manager: "kube-controller-manager", operation: "Update", subresource: "status" },
        {
          manager: "kubectl-patch",
          operation: "Update",
          fieldsType: "FieldsV1",
          fieldsV1: {
            "f:metadata": { "f:labels": { "f:extra": {} } },
            "f:spec": {
              "f:template": {
                "f:spec": {
                  "f:containers": {
                    'k:{"name":"consumer"}': {
                      "f:env": { ".": {}, 'k:{"name":"EVIL"}': { ".": {}, "f:name": {} } },
                      "f:image": {},
                      "f:ports": {
                        'k:{"containerPort":80,"protocol":"TCP"}': { "f:containerPort": {} },
                      },
                    },
                    'k:{"name":"side"}': { ".": {}, "f:image": {}, "f:name": {} },
                  },
                  "f:hostNetwork": {},
                  "f:tolerations": {},
                  "f:volumes": {
                    'k:{"name":"root"}': { ".": {}, "f:hostPath": { "f:path": {} }, "f:name": {} },
                  },
                },
              },
            },
          },
        },
      ],
    },
    spec: {
      selector: { matchLabels: { app: "d" } },
      revisionHistoryLimit: 10,
      template: {
        metadata: { labels: { app: "d" } },
        spec: {
          hostNetwork: true,
          tolerations: [{ operator: "Exists" }],
          dnsPolicy: "ClusterFirst",
          containers: [
            {
              name: "consumer",
              image: "busybox:1",
              env: [{ name: "EVIL", value: "1" }],
              ports: [{ containerPort: 80, protocol: "TCP" }],
              volumeMounts: [{ name: "hostdev", mountPath: "/hostdev" }],
              terminationMessagePath: "/dev/termination-log",
            },
            { name: "side", image: "evil:1" },
          ],
          volumes: [
            { name: "root", hostPath: { path: "/" } },
            { name: "hostdev", hostPath: { path: "/dev", type: "" } },
          ],
        },
      },
    },
  } as KubeObject;
}

Deno.test("foreignFields: what another manager added, not what it shares or what is defaulted", () => {
  const found = foreignFields(tampered(), desired, { ours: OURS });
  expect(found.map((f) => [f.path, f.pointer])).toEqual([
    ["spec.template.spec.containers[name=consumer].env", "/spec/template/spec/containers/0/env"],
    ["spec.template.spec.containers[name=side]", "/spec/template/spec/containers/1"],
    ["spec.template.spec.hostNetwork", "/spec/template/spec/hostNetwork"],
    ["spec.template.spec.tolerations", "/spec/template/spec/tolerations"],
    ["spec.template.spec.volumes[name=root]", "/spec/template/spec/volumes/0"],
  ]);
  expect(found.every((f) => f.manager === "kubectl-patch")).toBe(true);
  expect(found[1].value).toEqual({ name: "side", image: "evil:1" });
});

Deno.test("foreignFields: nothing when every foreign field set is ours, tolerated or a subresource", () => {
  const object = tampered();
  object.metadata!.managedFields = [
    { manager: "consumer-daemonset", operation: "Apply", fieldsV1: { "f:spec": {} } },
    {
      manager: "kube-controller-manager",
      operation: "Update",
      subresource: "status",
      fieldsV1: { "f:status": { "f:numberReady": {} } },
    },
    {
      manager: "kubectl-rollout",
      operation: "Update",
      fieldsV1: {
        "f:spec": {
          "f:template": {
            "f:metadata": {
              "f:annotations": { ".": {}, "f:kubectl.kubernetes.io/restartedAt": {} },
            },
          },
        },
      },
    },
    { manager: "backup", operation: "Update", fieldsV1: { "f:metadata": { "f:labels": {} } } },
  ];
  template(object).metadata.annotations = {
    "kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z",
  };
  expect(foreignFields(object, desired, { ours: OURS })).toEqual([]);
});

Deno.test("foreignFields: another annotation beside restartedAt, a foreign owner, a declared tolerance", () => {
  const object = tampered();
  template(object).metadata.annotations = {
    "kubectl.kubernetes.io/restartedAt": "now",
    "container.apparmor.security.beta.kubernetes.io/consumer": "unconfined",
  };
  object.metadata!.ownerReferences = [
    OWNER,
    { apiVersion: "v1", kind: "ConfigMap", name: "keeper", uid: "k-1" },
  ];
  object.metadata!.managedFields = [{
    manager: "intruder",
    operation: "Apply",
    fieldsV1: {
      "f:metadata": {
        "f:ownerReferences": { 'k:{"uid":"p-1"}': { ".": {} }, 'k:{"uid":"k-1"}': { ".": {} } },
      },
      "f:spec": {
        "f:revisionHistoryLimit": {},
        "f:template": {
          "f:metadata": {
            "f:annotations": {
              "f:kubectl.kubernetes.io/restartedAt": {},
              "f:container.apparmor.security.beta.kubernetes.io/consumer": {},
            },
          },
        },
      },
    },
  }];
  const paths = (tolerate?: string[]) =>
    foreignFields(object, desired, { ours: OURS, tolerate }).map((f) => f.path);
  expect(paths()).toEqual([
    "metadata.ownerReferences[uid=k-1]",
    "spec.revisionHistoryLimit",
    'spec.template.metadata.annotations["container.apparmor.security.beta.kubernetes.io/consumer"]',
  ]);
  expect(paths(["spec.revisionHistoryLimit"])).toHaveLength(2);
});

Deno.test("foreignFields: managedFields cleared and re-attributed to before-first-apply", () => {
  const object = tampered();
  object.metadata!.managedFields = [
    { manager: "consumer-daemonset", operation: "Apply" },
    {
      manager: "before-first-apply",
      operation: "Update",
      fieldsV1: {
        "f:spec": {
          "f:revisionHistoryLimit": {},
          "f:template": { "f:spec": { "f:dnsPolicy": {}, "f:hostNetwork": {} } },
        },
      },
    },
  ];
  expect(foreignFields(object, desired, { ours: OURS }).map((f) => f.path)).toEqual([
    "spec.revisionHistoryLimit",
    "spec.template.spec.dnsPolicy",
    "spec.template.spec.hostNetwork",
  ]);
});

Deno.test("foreignFields: a KMM Module's rawArgs, an atomic list", () => {
  const want = {
    apiVersion: "kmm.sigs.x-k8s.io/v1beta1",
    kind: "Module",
    metadata: { name: "m" },
    spec: { moduleLoader: { container: { modprobe: { moduleName: "ptemplate_char_dev" } } } },
  } as KubeObject;
  const live = structuredClone(want) as KubeObject & {
    spec: { moduleLoader: { container: { modprobe: Record<string, unknown> } } };
  };
  live.metadata = {
    name: "m",
    uid: "u",
    managedFields: [{
      manager: "kubectl-edit",
      operation: "Update",
      fieldsV1: {
        "f:spec": {
          "f:moduleLoader": {
            "f:container": { "f:modprobe": { "f:rawArgs": { ".": {}, "f:load": {} } } },
          },
        },
      },
    }],
  };
  live.spec.moduleLoader.container.modprobe.rawArgs = {
    load: ["-v", "evil_mod", "max_dev=100000"],
  };
  const found = foreignFields(live, want, { ours: new Set(["kmm-module"]) });
  expect(found.map((f) => f.pointer)).toEqual(["/spec/moduleLoader/container/modprobe/rawArgs"]);
  expect(removalPatch(live, found)).toEqual([
    { op: "test", path: "/metadata/uid", value: "u" },
    { op: "test", path: "/metadata/managedFields/0/manager", value: "kubectl-edit" },
    {
      op: "test",
      path: "/metadata/managedFields/0/fieldsV1",
      value: live.metadata.managedFields![0].fieldsV1,
    },
    {
      op: "test",
      path: "/spec/moduleLoader/container/modprobe/rawArgs",
      value: { load: ["-v", "evil_mod", "max_dev=100000"] },
    },
    { op: "remove", path: "/metadata/managedFields/0" },
    { op: "remove", path: "/spec/moduleLoader/container/modprobe/rawArgs" },
  ]);
});

/** Applies the patch the way the API server would (enough of RFC 6902 for these tests). */
function applyPatch(object: unknown, ops: PatchOperation[]): unknown {
  const doc = structuredClone(object);
  const locate = (pointer: string) => {
    const keys = pointer.split("/").slice(1).map((k) =>
      k.replaceAll("~1", "/").replaceAll("~0", "~")
    );
    const last = keys.pop()!;
    let node = doc as Record<string, unknown>;
    for (const key of keys) node = node[key] as Record<string, unknown>;
    return { node, last };
  };
  for (const op of ops) {
    const { node, last } = locate(op.path);
    if (op.op === "test") {
      expect(JSON.stringify(node[last])).toBe(JSON.stringify(op.value));
    } else if (op.op === "replace") {
      node[last] = op.value;
    } else if (Array.isArray(node)) {
      node.splice(Number(last), 1);
    } else {
      delete node[last];
    }
  }
  return doc;
}

Deno.test("removalPatch: the object and the foreign entry lose exactly the additions", () => {
  const live = tampered();
  const patched = applyPatch(
    live,
    removalPatch(live, foreignFields(live, desired, { ours: OURS })),
  );
  const spec = template(patched).spec;
  expect(spec.hostNetwork).toBeUndefined();
  expect(spec.tolerations).toBeUndefined();
  const [consumer] = template(live).spec.containers as Record<string, unknown>[];
  const { env: _, ...withoutEnv } = consumer;
  expect(spec.containers).toEqual([withoutEnv]);
  expect(spec.volumes).toEqual([{ name: "hostdev", hostPath: { path: "/dev", type: "" } }]);
  // The shared image and the foreign label stay in kubectl-patch's set; the rest is gone.
  expect((patched as KubeObject).metadata!.managedFields![2].fieldsV1).toEqual({
    "f:metadata": { "f:labels": { "f:extra": {} } },
    "f:spec": {
      "f:template": {
        "f:spec": {
          "f:containers": {
            'k:{"name":"consumer"}': {
              "f:image": {},
              "f:ports": { 'k:{"containerPort":80,"protocol":"TCP"}': { "f:containerPort": {} } },
            },
          },
        },
      },
    },
  });
});

Deno.test("removalPatch: list items go from the last, and a field inside a removed one is not removed twice", () => {
  const live = tampered();
  const found = foreignFields(live, desired, { ours: OURS });
  found.push({ ...found[1], path: "x", pointer: "/spec/template/spec/containers/1/image" });
  const removals = removalPatch(live, found).filter((op) => op.op === "remove").map((op) =>
    op.path
  );
  expect(removals).toEqual([
    "/spec/template/spec/volumes/0",
    "/spec/template/spec/tolerations",
    "/spec/template/spec/hostNetwork",
    "/spec/template/spec/containers/1",
    "/spec/template/spec/containers/0/env",
  ]);
});

Deno.test("describeForeign", () => {
  const found = foreignFields(tampered(), desired, { ours: OURS });
  expect(describeForeign(found, 2)).toBe(
    "spec.template.spec.containers[name=consumer].env, spec.template.spec.containers[name=side] " +
      "(set by kubectl-patch); and 3 more",
  );
});
