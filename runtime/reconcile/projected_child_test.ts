/** A child's kind cached as projected (its managed fields): still up to date, drift and additions still seen. */
import { expect } from "expect";
import type { DaemonSet } from "kubernetes-types/apps/v1.d.ts";
import type { KubeObject } from "../../kube/object.ts";
import { projector } from "../cache/mod.ts";
import { PTEMPLATE_OPERATOR } from "../identity/mod.ts";
import { childUpToDate } from "./desired_state.ts";
import { foreignFields } from "./foreign_fields.ts";

/** A DaemonSet as the API server has it: our apply's fields, defaults nobody owns, a status. */
function daemonSet(edit?: (ds: DaemonSet, fields: FieldSet[]) => void): KubeObject {
  const ds: DaemonSet = {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: {
      name: "pt-consumer",
      namespace: "ns",
      uid: "u1",
      labels: { app: "pt" },
      managedFields: [{
        manager: "consumer-daemonset",
        operation: "Apply",
        fieldsV1: {
          "f:metadata": { "f:labels": { "f:app": {} } },
          "f:spec": {
            "f:selector": {},
            "f:template": {
              "f:spec": {
                "f:containers": {
                  'k:{"name":"consumer"}': {
                    ".": {},
                    "f:name": {},
                    "f:image": {},
                    "f:volumeMounts": { 'k:{"mountPath":"/hostdev"}': { ".": {}, "f:name": {} } },
                  },
                },
                "f:nodeSelector": {},
              },
            },
          },
        },
      }, {
        manager: "kube-controller-manager",
        operation: "Update",
        subresource: "status",
        fieldsV1: { "f:status": { "f:numberReady": {} } },
      }],
    },
    spec: {
      selector: { matchLabels: { a: "b" } },
      revisionHistoryLimit: 10,
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1 } },
      template: {
        spec: {
          dnsPolicy: "ClusterFirst",
          nodeSelector: { pool: "x" },
          containers: [{
            name: "consumer",
            image: "img:1",
            terminationMessagePath: "/dev/termination-log",
            volumeMounts: [{ name: "hostdev", mountPath: "/hostdev" }],
          }],
        },
      },
    },
    status: {
      numberReady: 2,
      desiredNumberScheduled: 3,
      currentNumberScheduled: 3,
      numberMisscheduled: 0,
    },
  };
  edit?.(ds, ds.metadata!.managedFields!.map((entry) => entry.fieldsV1 as FieldSet));
  return ds as KubeObject;
}

/** A `fieldsV1`, to take paths out of. */
type FieldSet = { [key: string]: FieldSet };

const desired = {
  apiVersion: "apps/v1",
  kind: "DaemonSet",
  metadata: { name: "pt-consumer", namespace: "ns", labels: { app: "pt" } },
  spec: {
    selector: { matchLabels: { a: "b" } },
    template: {
      spec: {
        nodeSelector: { pool: "x" },
        containers: [{
          name: "consumer",
          image: "img:1",
          volumeMounts: [{ name: "hostdev", mountPath: "/hostdev" }],
        }],
      },
    },
  },
} as KubeObject;

Deno.test("a child keeps what some manager set, with its values; defaults and status go", () => {
  const project = projector({ fields: [], managed: true });
  const kept = project(daemonSet()) as DaemonSet;
  expect(kept.spec).toEqual((desired as Record<string, unknown>).spec);
  expect(kept.status).toBeUndefined();
  expect(kept.metadata!.name).toBe("pt-consumer");
  expect(childUpToDate(desired, kept, PTEMPLATE_OPERATOR)).toBe(true);
});

Deno.test("a hand edit of a field we set is still seen in the projection (drift)", () => {
  const project = projector({ fields: ["status"], managed: true });
  // kubectl edit: the image now belongs to kubectl-edit, with its new value.
  const edited = project(daemonSet((ds, [ours]) => {
    ds.spec!.template.spec!.containers[0].image = "evil:2";
    ds.metadata!.managedFields!.push({
      manager: "kubectl-edit",
      operation: "Update",
      fieldsV1: {
        "f:spec": {
          "f:template": {
            "f:spec": { "f:containers": { 'k:{"name":"consumer"}': { "f:image": {} } } },
          },
        },
      },
    });
    delete ours["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"consumer"}'][
      "f:image"
    ];
  })) as DaemonSet;
  expect(edited.spec!.template.spec!.containers[0].image).toBe("evil:2");
  expect(childUpToDate(desired, edited, PTEMPLATE_OPERATOR)).toBe(false);
  // A field removed by hand is missing: drift too.
  const removed = project(daemonSet((ds, [ours]) => {
    delete ds.spec!.template.spec!.nodeSelector;
    delete ours["f:spec"]["f:template"]["f:spec"]["f:nodeSelector"];
  }));
  expect(childUpToDate(desired, removed, PTEMPLATE_OPERATOR)).toBe(false);
  expect(edited.status!.numberReady).toBe(2);
});

Deno.test("what someone else added is kept, so it is found and named", () => {
  const project = projector({ fields: [], managed: true });
  const added = project(daemonSet((ds) => {
    ds.spec!.template.spec!.hostNetwork = true;
    ds.metadata!.managedFields!.push({
      manager: "kubectl-patch",
      operation: "Update",
      fieldsV1: { "f:spec": { "f:template": { "f:spec": { "f:hostNetwork": {} } } } },
    });
  }));
  const found = foreignFields(added, desired, { ours: new Set(["consumer-daemonset"]) });
  expect(found.map((f) => [f.path, f.manager])).toEqual([
    ["spec.template.spec.hostNetwork", "kubectl-patch"],
  ]);
});
