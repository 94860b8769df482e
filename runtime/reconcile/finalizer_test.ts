import { expect } from "expect";
import { finalizerOf, hasFinalizer } from "./finalizer.ts";
import { definePlugin } from "../plugin/mod.ts";

const FOR = { group: "x.example.com", version: "v1", kind: "X", plural: "xs", namespaced: true };
const reconcile = () => {};

Deno.test("a plugin's finalizer is qualified by default, and checked when given", () => {
  expect(finalizerOf(definePlugin({ name: "cleaner", for: FOR, reconcile, finalize() {} })))
    .toBe("operator.pt.example.com/cleaner");
  expect(finalizerOf({ name: "cleaner", finalizer: "x.example.com/mine" })).toBe(
    "x.example.com/mine",
  );
  expect(() => definePlugin({ name: "c", for: FOR, reconcile, finalize() {}, finalizer: "mine" }))
    .toThrow(/qualified name, e\.g\. example\.com\/cleanup/);
  expect(() => definePlugin({ name: "c", for: FOR, reconcile, finalizer: "x.example.com/mine" }))
    .toThrow(/without a finalize function/);
});

Deno.test("hasFinalizer reads metadata.finalizers", () => {
  expect(hasFinalizer({ metadata: { finalizers: ["a/b", "c/d"] } }, "c/d")).toBe(true);
  expect(hasFinalizer({ metadata: {} }, "c/d")).toBe(false);
});
