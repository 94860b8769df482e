import { expect } from "expect";
import type { KubeObject } from "../../kube/object.ts";
import { defineOperator, formerTracesOf, PTEMPLATE_OPERATOR } from "../identity/mod.ts";
import { handOverPatch, madeUnderFormer } from "./hand_over.ts";

const OLD = defineOperator({ name: "old-operator", domain: "web.example.com", version: "0.1.0" });
const OWN = defineOperator({
  name: "web-operator",
  domain: "web.example.com",
  version: "0.1.0",
  takesOverFrom: [PTEMPLATE_OPERATOR, OLD],
});

Deno.test("a former identity's traces: its field manager for the plugin, its label and annotation", () => {
  const traces = formerTracesOf(OWN, "website");
  expect([...traces.managers]).toEqual(["website", "old-operator/website"]);
  expect(traces.labels).toEqual([
    "operator.ptemplate.dev/plugin",
    "old-operator.web.example.com/plugin",
  ]);
  expect(traces.annotations).toEqual([
    "operator.ptemplate.dev/desired-hash",
    "old-operator.web.example.com/desired-hash",
  ]);
  // Itself is never a former identity; one that takes over from nobody has none.
  const self = defineOperator({ ...OWN, takesOverFrom: [OWN] });
  expect(self.formerIdentities).toEqual([]);
  expect([...formerTracesOf(OLD, "website").managers]).toEqual([]);
});

Deno.test("made under a former identity: its plugin label, valued with this plugin's name", () => {
  const traces = formerTracesOf(OWN, "website");
  const labelled = (labels: Record<string, string | undefined>) => ({
    metadata: { name: "x", labels: labels as Record<string, string> },
  });
  expect(
    madeUnderFormer(labelled({ "operator.ptemplate.dev/plugin": "website" }), "website", traces),
  )
    .toBe(true);
  // Another plugin's child, our own child, and an unlisted identity's: not taken over.
  for (
    const labels of [
      { "operator.ptemplate.dev/plugin": "shop" },
      { "web-operator.web.example.com/plugin": "website" },
      { "stranger.example.com/plugin": "website" },
      {},
    ]
  ) {
    expect({ labels, taken: madeUnderFormer(labelled(labels), "website", traces) }).toEqual({
      labels,
      taken: false,
    });
  }
});

const entry = (
  manager: string,
  operation: string,
  fieldsV1: Record<string, unknown>,
  subresource?: string,
) => ({
  manager,
  operation,
  apiVersion: "apps/v1",
  fieldsType: "FieldsV1",
  fieldsV1,
  ...subresource ? { subresource } : {},
});

Deno.test("the hand-over patch: the former's and our field sets as one Apply entry of ours, old names gone", () => {
  const live: KubeObject = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: {
      name: "site",
      uid: "u1",
      labels: { "operator.ptemplate.dev/plugin": "website", "team": "web" },
      annotations: { "operator.ptemplate.dev/desired-hash": "abc" },
      managedFields: [
        entry("website", "Update", {
          "f:metadata": {
            "f:labels": { "f:operator.ptemplate.dev/plugin": {} },
            "f:annotations": { "f:operator.ptemplate.dev/desired-hash": {} },
          },
          "f:spec": { "f:replicas": {}, "f:template": { "f:spec": { "f:dnsPolicy": {} } } },
        }),
        entry("kube-controller-manager", "Update", { "f:status": {} }, "status"),
        entry("kubectl-edit", "Update", { "f:spec": { "f:paused": {} } }),
        entry("web-operator/website", "Apply", { "f:spec": { "f:replicas": {} } }),
        entry("website", "Update", { "f:status": { "f:x": {} } }, "status"),
      ],
    },
  };
  const patch = handOverPatch(live, "web-operator/website", formerTracesOf(OWN, "website"))!;
  const tests = patch.filter((op) => op.op === "test").map((op) => op.path);
  expect(tests).toEqual([
    "/metadata/uid",
    "/metadata/managedFields/0/manager",
    "/metadata/managedFields/0/fieldsV1",
    "/metadata/managedFields/3/manager",
    "/metadata/managedFields/3/fieldsV1",
    "/metadata/labels/operator.ptemplate.dev~1plugin",
    "/metadata/annotations/operator.ptemplate.dev~1desired-hash",
  ]);
  // Into our Apply entry: the union, without the labels and annotations that go.
  expect(patch.filter((op) => op.op !== "test")).toEqual([
    {
      op: "replace",
      path: "/metadata/managedFields/3",
      value: entry("web-operator/website", "Apply", {
        "f:spec": { "f:replicas": {}, "f:template": { "f:spec": { "f:dnsPolicy": {} } } },
      }),
    },
    { op: "remove", path: "/metadata/managedFields/0" },
    { op: "remove", path: "/metadata/labels/operator.ptemplate.dev~1plugin" },
    { op: "remove", path: "/metadata/annotations/operator.ptemplate.dev~1desired-hash" },
  ]);
  // A subresource's entries (status) and an unlisted manager's (kubectl-edit) stay as they are.
});

Deno.test("without an entry of ours, the former's becomes ours; nothing to hand over is no patch", () => {
  const traces = formerTracesOf(OWN, "website");
  const live: KubeObject = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: "c",
      uid: "u2",
      managedFields: [entry("old-operator/website", "Apply", { "f:data": { "f:a": {} } })],
    },
  };
  const patch = handOverPatch(live, "web-operator/website", traces)!;
  expect(patch.filter((op) => op.op !== "test")).toEqual([{
    op: "replace",
    path: "/metadata/managedFields/0",
    value: {
      ...entry("web-operator/website", "Apply", { "f:data": { "f:a": {} } }),
      apiVersion: "v1",
    },
  }]);
  const ours: KubeObject = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: "c",
      uid: "u2",
      managedFields: [entry("web-operator/website", "Apply", { "f:data": {} })],
    },
  };
  expect(handOverPatch(ours, "web-operator/website", traces)).toBeUndefined();
});
