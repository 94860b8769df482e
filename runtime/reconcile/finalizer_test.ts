import { expect } from "expect";
import type { KubeClient } from "../../kube/client.ts";
import { finalizerOf, hasFinalizer, setFinalizer } from "./finalizer.ts";
import { definePlugin } from "../plugin/mod.ts";
import { defineOperator, PTEMPLATE_OPERATOR } from "../identity/mod.ts";

const OURS = PTEMPLATE_OPERATOR;
const BACKUP = defineOperator({ name: "backup-operator", domain: "example.com", version: "0.1.0" });

const FOR = { group: "x.example.com", version: "v1", kind: "X", plural: "xs", namespaced: true };
const reconcile = () => {};

Deno.test("a plugin's finalizer is qualified by default, and checked when given", () => {
  expect(finalizerOf(definePlugin({ name: "cleaner", for: FOR, reconcile, finalize() {} }), OURS))
    .toBe("operator.pt.example.com/cleaner");
  expect(finalizerOf({ name: "cleaner" }, BACKUP)).toBe("backup-operator.example.com/cleaner");
  expect(finalizerOf({ name: "cleaner", finalizer: "x.example.com/mine" }, BACKUP)).toBe(
    "x.example.com/mine",
  );
  expect(() => definePlugin({ name: "c", for: FOR, reconcile, finalize() {}, finalizer: "mine" }))
    .toThrow(/qualified name, e\.g\. example\.com\/cleanup/);
  expect(() => definePlugin({ name: "c", for: FOR, reconcile, finalizer: "x.example.com/mine" }))
    .toThrow(/without a finalize function/);
});

Deno.test("hasFinalizer reads metadata.finalizers, the earlier default name included", () => {
  const own = { name: "p", finalizer: "c.example.com/d" };
  expect(hasFinalizer({ metadata: { finalizers: ["a/b", "c.example.com/d"] } }, own, OURS)).toBe(
    true,
  );
  expect(hasFinalizer({ metadata: {} }, own, OURS)).toBe(false);
  const byDefault = { name: "cleaner" };
  for (const finalizer of ["operator.ptemplate.dev/cleaner", "operator.pt.example.com/cleaner"]) {
    expect(hasFinalizer({ metadata: { finalizers: [finalizer] } }, byDefault, OURS)).toBe(true);
    // Another operator's plugin of the same name: neither name is its.
    expect(hasFinalizer({ metadata: { finalizers: [finalizer] } }, byDefault, BACKUP)).toBe(false);
  }
  // A plugin that names its own finalizer never had a default.
  expect(hasFinalizer({ metadata: { finalizers: ["operator.pt.example.com/p"] } }, own, OURS)).toBe(
    false,
  );
  expect(hasFinalizer({ metadata: { finalizers: ["operator.ptemplate.dev/p"] } }, own, OURS)).toBe(
    false,
  );
});

Deno.test("setFinalizer adds the current name, and removes the old one with it", async () => {
  const patches: unknown[] = [];
  const client = { patch: (...args: unknown[]) => patches.push(args[2]) } as unknown as KubeClient;
  const object = {
    metadata: {
      name: "x",
      namespace: "ns",
      resourceVersion: "7",
      finalizers: ["someone.else/keep", "operator.ptemplate.dev/cleaner"],
    },
  };
  await setFinalizer(client, FOR, object, { name: "cleaner" }, OURS, { present: false });
  await setFinalizer(client, FOR, { metadata: { name: "y" } }, { name: "cleaner" }, OURS, {
    present: true,
  });
  expect(patches).toEqual([
    { metadata: { resourceVersion: "7", finalizers: ["someone.else/keep"] } },
    { metadata: { resourceVersion: undefined, finalizers: ["operator.pt.example.com/cleaner"] } },
  ]);
});
