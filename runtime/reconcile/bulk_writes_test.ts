import { expect } from "expect";
import type { KubeObject } from "../../kube/object.ts";
import { BulkWrites } from "./bulk_writes.ts";

const PARENT = "Ptemplate.pt.example.com/ns/p";

function module(resourceVersion: string, controller = "p"): KubeObject {
  return {
    apiVersion: "kmm.sigs.x-k8s.io/v1beta1",
    kind: "Module",
    metadata: {
      name: "m",
      namespace: "ns",
      uid: "m-uid",
      resourceVersion,
      ownerReferences: [{
        apiVersion: "pt.example.com/v1alpha1",
        kind: "Ptemplate",
        name: controller,
        uid: `${controller}-uid`,
        controller: true,
      }],
    },
  };
}

Deno.test("a version a bulk visit wrote is bulk-made for every plugin that asks", () => {
  const bulk = new BulkWrites();
  bulk.wrote("m-uid@5");
  expect([bulk.made(module("5")), bulk.made(module("5"))]).toEqual([true, true]);
  expect(bulk.made(module("6"))).toBe(false);
});

Deno.test("a child changed while a bulk visit of its controller is under way is bulk-made", () => {
  const bulk = new BulkWrites();
  const ended = bulk.visit(PARENT);
  // The watch brought the write's echo before its answer named the version.
  expect(bulk.made(module("7"))).toBe(true);
  expect(bulk.made(module("7", "other"))).toBe(false);
  ended();
  ended();
  expect(bulk.made(module("8"))).toBe(false);
});

Deno.test("two plugins' bulk visits of one parent: it is under way until both end", () => {
  const bulk = new BulkWrites();
  const first = bulk.visit(PARENT);
  const second = bulk.visit(PARENT);
  first();
  expect(bulk.made(module("9"))).toBe(true);
  second();
  expect(bulk.made(module("9"))).toBe(false);
});

Deno.test("past its bound, the oldest version is forgotten first", () => {
  const bulk = new BulkWrites({ max: 2 });
  for (const rv of ["1", "2", "3"]) bulk.wrote(`m-uid@${rv}`);
  expect(["1", "2", "3"].map((rv) => bulk.made(module(rv)))).toEqual([false, true, true]);
});

Deno.test("a parent changed while a bulk visit of it is under way (its status) is bulk-made", () => {
  const bulk = new BulkWrites();
  const parent = { metadata: { name: "p", namespace: "ns", uid: "p-uid", resourceVersion: "3" } };
  const ended = bulk.visit(PARENT);
  expect(bulk.made(parent, PARENT)).toBe(true);
  expect(bulk.made(parent, "Ptemplate.pt.example.com/ns/other")).toBe(false);
  ended();
  expect(bulk.made(parent, PARENT)).toBe(false);
  // Its status write's echo after the visit: known by its version.
  bulk.wrote("p-uid@3");
  expect(bulk.made(parent, PARENT)).toBe(true);
});
