import { expect } from "expect";
import { childUpToDate, isSubset, stableStringify, stampChild } from "./desired_state.ts";
import { defineOperator, PTEMPLATE_OPERATOR } from "../identity/mod.ts";

const { hashAnnotation: HASH_ANNOTATION, pluginLabel: PLUGIN_LABEL } = PTEMPLATE_OPERATOR;

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
  const stamped = await stampChild(child, parent, "sample", PTEMPLATE_OPERATOR);
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
  const again = await stampChild(
    { ...child, data: { k: "v" } },
    parent,
    "sample",
    PTEMPLATE_OPERATOR,
  );
  expect(again.metadata?.annotations?.[HASH_ANNOTATION]).toBe(
    stamped.metadata?.annotations?.[HASH_ANNOTATION],
  );
  const changed = await stampChild({ ...child, data: {} }, parent, "sample", PTEMPLATE_OPERATOR);
  expect(changed.metadata?.annotations?.[HASH_ANNOTATION]).not.toBe(
    stamped.metadata?.annotations?.[HASH_ANNOTATION],
  );
  await expect(
    stampChild({ kind: "ConfigMap", metadata: {} }, parent, "sample", PTEMPLATE_OPERATOR),
  ).rejects.toThrow(
    /has no metadata.name/,
  );
});

Deno.test("childUpToDate: drift, a removed field and a foreign edit", async () => {
  const stamped = await stampChild(
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" }, data: { k: "v" } },
    parent,
    "sample",
    PTEMPLATE_OPERATOR,
  );
  const cached = {
    ...stamped,
    metadata: {
      ...stamped.metadata,
      resourceVersion: "7",
      labels: { ...stamped.metadata?.labels, "someone-else": "x" },
    },
  };
  expect(childUpToDate(stamped, cached, PTEMPLATE_OPERATOR)).toBe(true);
  expect(childUpToDate(stamped, { ...cached, data: { k: "edited" } }, PTEMPLATE_OPERATOR)).toBe(
    false,
  );
  const fewer = await stampChild(
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" } },
    parent,
    "sample",
    PTEMPLATE_OPERATOR,
  );
  expect(childUpToDate(fewer, stamped, PTEMPLATE_OPERATOR)).toBe(false); // data was dropped: the hash differs
  expect(childUpToDate(stamped, undefined, PTEMPLATE_OPERATOR)).toBe(false);
});

Deno.test("stableStringify sorts keys at every depth", () => {
  expect(stableStringify({ b: 1, a: { d: [{ z: 1, y: 2 }], c: 2 } })).toBe(
    '{"a":{"c":2,"d":[{"y":2,"z":1}]},"b":1}',
  );
});

Deno.test("another operator stamps its children with its own names, and reads only those", async () => {
  const backup = defineOperator({
    name: "backup-operator",
    domain: "example.com",
    version: "0.1.0",
  });
  const child = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" }, data: { k: "v" } };
  const theirs = await stampChild(child, parent, "sample", backup);
  expect(theirs.metadata?.labels).toEqual({ "backup-operator.example.com/plugin": "sample" });
  expect(Object.keys(theirs.metadata?.annotations ?? {})).toEqual([
    "backup-operator.example.com/desired-hash",
  ]);
  expect(childUpToDate(theirs, theirs, backup)).toBe(true);
  // Ours is not theirs: a child they stamped is not one we applied, whatever its content.
  const ours = await stampChild(child, parent, "sample", PTEMPLATE_OPERATOR);
  expect(childUpToDate(ours, theirs, PTEMPLATE_OPERATOR)).toBe(false);
});
