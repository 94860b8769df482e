import { expect } from "expect";
import { childUpToDate, isSubset, stableStringify, stampChild } from "./desired_state.ts";
import { HASH_ANNOTATION, PLUGIN_LABEL } from "./operator_domain.ts";

const parent = {
  apiVersion: "pt.example.com/v1alpha1",
  kind: "Ptemplate",
  metadata: { name: "p", namespace: "ns", uid: "u-1" },
};

Deno.test("isSubset: server defaults are ignored, our fields must match", () => {
  expect(isSubset({ a: 1, b: { c: "x" } }, { a: 1, b: { c: "x", d: 2 }, e: 3 })).toBe(true);
  expect(isSubset({ limits: { dev: 2 } }, { limits: { dev: "2" } })).toBe(true);
  expect(isSubset({ a: [1, 2] }, { a: [1, 2, 3] })).toBe(false);
  expect(isSubset({ a: [{ n: "c" }] }, { a: [{ n: "c", extra: true }] })).toBe(true);
  expect(isSubset({ a: "x" }, { a: "y" })).toBe(false);
  expect(isSubset({ a: undefined }, {})).toBe(true);
  expect(isSubset({ a: {} }, { a: null })).toBe(false);
});

Deno.test("stampChild: namespace, owner, plugin label and content hash", async () => {
  const child = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" }, data: { k: "v" } };
  const stamped = await stampChild(child, parent, "sample");
  expect(stamped.metadata?.namespace).toBe("ns");
  expect(stamped.metadata?.labels?.[PLUGIN_LABEL]).toBe("sample");
  expect(stamped.metadata?.ownerReferences).toEqual([
    {
      apiVersion: "pt.example.com/v1alpha1",
      kind: "Ptemplate",
      name: "p",
      uid: "u-1",
      controller: true,
      blockOwnerDeletion: true,
    },
  ]);
  const again = await stampChild({ ...child, data: { k: "v" } }, parent, "sample");
  expect(again.metadata?.annotations?.[HASH_ANNOTATION]).toBe(
    stamped.metadata?.annotations?.[HASH_ANNOTATION],
  );
  const changed = await stampChild({ ...child, data: {} }, parent, "sample");
  expect(changed.metadata?.annotations?.[HASH_ANNOTATION]).not.toBe(
    stamped.metadata?.annotations?.[HASH_ANNOTATION],
  );
  await expect(stampChild({ kind: "ConfigMap", metadata: {} }, parent, "sample")).rejects.toThrow(
    /has no metadata.name/,
  );
});

Deno.test("childUpToDate: drift, a removed field and a foreign edit", async () => {
  const stamped = await stampChild(
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" }, data: { k: "v" } },
    parent,
    "sample",
  );
  const cached = {
    ...stamped,
    metadata: {
      ...stamped.metadata,
      resourceVersion: "7",
      labels: { ...stamped.metadata?.labels, "someone-else": "x" },
    },
  };
  expect(childUpToDate(stamped, cached)).toBe(true);
  expect(childUpToDate(stamped, { ...cached, data: { k: "edited" } })).toBe(false);
  const fewer = await stampChild(
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" } },
    parent,
    "sample",
  );
  expect(childUpToDate(fewer, stamped)).toBe(false); // data was dropped: the hash differs
  expect(childUpToDate(stamped, undefined)).toBe(false);
});

Deno.test("stableStringify sorts keys at every depth", () => {
  expect(stableStringify({ b: 1, a: { d: [{ z: 1, y: 2 }], c: 2 } })).toBe(
    '{"a":{"c":2,"d":[{"y":2,"z":1}]},"b":1}',
  );
});
