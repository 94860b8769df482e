import { expect } from "expect";
import { equal, relevantChange } from "./relevant_change.ts";
import type { KubeObject } from "../../kube/object.ts";

// deno-lint-ignore no-explicit-any
type Json = Record<string, any>;

const ds = (change: (o: Json) => void = () => {}): KubeObject => {
  const object: Json = {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: {
      name: "a",
      namespace: "ns",
      uid: "u1",
      resourceVersion: "1",
      generation: 1,
      labels: { app: "a" },
      annotations: { "x/hash": "h1" },
      ownerReferences: [{ apiVersion: "v1", kind: "P", name: "p", uid: "p1", controller: true }],
      managedFields: [
        { manager: "consumer-daemonset", operation: "Update", time: "t1" },
        {
          manager: "kube-controller-manager",
          operation: "Update",
          subresource: "status",
          time: "t1",
        },
      ],
    },
    spec: { template: { spec: { containers: [{ name: "c", image: "i:1" }] } } },
    status: { numberReady: 0, observedGeneration: 1 },
  };
  change(object);
  return object as KubeObject;
};

Deno.test("relevantChange: a status written by another controller is no change to a reader of none", () => {
  const relevant = relevantChange([]);
  const after = ds((o) => {
    o.metadata.resourceVersion = "2";
    o.metadata.managedFields[1].time = "t2";
    o.metadata.managedFields[0].time = "t2";
    o.status = { numberReady: 3, observedGeneration: 1 };
  });
  expect(relevant(ds(), after)).toBe(false);
  // Entries written through a subresource are not compared, wherever they stand in the list.
  const statusFirst = ds((o) => {
    const [main, status] = o.metadata.managedFields;
    o.metadata.managedFields = [{ ...status, fieldsV1: { "f:status": {} } }, main];
  });
  expect(relevant(ds(), statusFirst)).toBe(false);
  expect(relevant(ds(), ds((o) => o.metadata.managedFields.pop()))).toBe(false);
  // A reader of the status sees it.
  expect(relevantChange(["status"])(ds(), after)).toBe(true);
  expect(relevantChange(["status.numberReady"])(ds(), after)).toBe(true);
  expect(relevantChange(["status.observedGeneration"])(ds(), after)).toBe(false);
});

Deno.test("relevantChange: what the runtime acts on is always a change", () => {
  const relevant = relevantChange([]);
  const edits: [string, (o: Json) => void][] = [
    ["generation (a spec edit)", (o) => o.metadata.generation = 2],
    ["a label", (o) => o.metadata.labels.app = "b"],
    ["a label removed", (o) => delete o.metadata.labels],
    ["our hash annotation", (o) => o.metadata.annotations["x/hash"] = "h2"],
    ["owner references", (o) => o.metadata.ownerReferences = []],
    ["deletion", (o) => o.metadata.deletionTimestamp = "2026-01-01T00:00:00Z"],
    ["finalizers", (o) => o.metadata.finalizers = ["f"]],
    ["a new field manager", (o) => o.metadata.managedFields.push({ manager: "kubectl-edit" })],
    ["a foreign set changed", (o) => o.metadata.managedFields[0].fieldsV1 = { "f:spec": {} }],
    ["the uid (made anew)", (o) => o.metadata.uid = "u2"],
  ];
  for (const [what, edit] of edits) {
    expect({ what, relevant: relevant(ds(), ds(edit)) }).toEqual({ what, relevant: true });
  }
});

Deno.test("relevantChange: declared fields, undeclared fields, and no declaration at all", () => {
  const image = ds((o) => o.spec.template.spec.containers[0].image = "i:2");
  // Generation did not move here (as for a kind that keeps none): only a reader of it sees it.
  expect(relevantChange(["spec.template.spec.containers[*].image"])(ds(), image)).toBe(true);
  expect(relevantChange(["spec.template.spec.containers[*].name"])(ds(), image)).toBe(false);
  expect(relevantChange(["status"])(ds(), image)).toBe(false);
  // A plugin that declared nothing about a kind reads all of it.
  expect(relevantChange(undefined)(ds(), ds((o) => o.metadata.resourceVersion = "9"))).toBe(true);
});

Deno.test("equal: deep, key order free, an absent map equal to an empty one", () => {
  expect(equal({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 })).toBe(true);
  expect(equal({ a: 1 }, { a: "1" })).toBe(false);
  expect(equal([1, 2], [2, 1])).toBe(false);
  expect(equal(undefined, {})).toBe(true);
  expect(equal(undefined, [])).toBe(true);
  expect(equal(undefined, { a: 1 })).toBe(false);
  expect(equal(0, undefined)).toBe(false);
  expect(equal("", undefined)).toBe(false);
  expect(equal([], {})).toBe(false);
});

Deno.test("relevantChange: the very same spec, an equal copy and a changed one, to a reader of the spec", () => {
  const relevant = relevantChange(["spec.template.spec.containers[*].image"]);
  const before = ds();
  const same = {
    ...ds((o) => o.status.numberReady = 1),
    spec: (before as Json).spec,
  } as KubeObject;
  expect(relevant(before, same)).toBe(false);
  expect(relevant(before, ds((o) => o.status.numberReady = 1))).toBe(false);
  expect(relevant(before, ds((o) => o.spec.template.spec.containers[0].image = "i:2"))).toBe(true);
});
