import { expect } from "expect";
import fc from "fast-check";
import { DAEMON_SET, NODE } from "./kinds.ts";
import {
  describeRef,
  objectRef,
  ownerRefOf,
  parseRefKey,
  refKey,
  refTo,
  sameObject,
} from "./object_ref.ts";

Deno.test("an object's ref: kind and group from its resource, namespace only when namespaced", () => {
  const ds = objectRef(DAEMON_SET, { metadata: { name: "d", namespace: "ns", uid: "u" } });
  expect(ds).toEqual({ group: "apps", kind: "DaemonSet", namespace: "ns", name: "d", uid: "u" });
  expect(refKey(ds)).toBe("DaemonSet.apps/ns/d");
  expect(describeRef(ds)).toBe("DaemonSet ns/d");
  const node = objectRef(NODE, { metadata: { name: "w1", namespace: "ignored" } });
  expect(refKey(node)).toBe("Node/w1");
  expect(describeRef(node)).toBe("Node w1");
});

Deno.test("an owner reference's ref, and sameness by uid or else by key", () => {
  const owner = { apiVersion: "apps/v1", kind: "DaemonSet", name: "d", uid: "u" };
  expect(ownerRefOf(owner, "ns")).toEqual({
    group: "apps",
    kind: "DaemonSet",
    namespace: "ns",
    name: "d",
    uid: "u",
  });
  expect(ownerRefOf({ ...owner, apiVersion: "v1", kind: "Node" }).group).toBe("");
  const named = refTo(DAEMON_SET, { namespace: "ns", name: "d" });
  expect(sameObject(ownerRefOf(owner, "ns"), named)).toBe(true);
  expect(sameObject(ownerRefOf(owner, "ns"), { ...named, uid: "other" })).toBe(false);
  expect(sameObject(ownerRefOf(owner), named)).toBe(false);
});

Deno.test("a key splits back into its ref, for every name a cluster allows", () => {
  const label = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?$/);
  fc.assert(
    fc.property(
      fc.record({
        group: fc.oneof(fc.constant(""), fc.stringMatching(/^[a-z]{1,8}(\.[a-z]{1,8}){0,3}$/)),
        kind: fc.stringMatching(/^[A-Z][A-Za-z]{0,15}$/),
        namespace: fc.option(label, { nil: undefined }),
        name: fc.stringMatching(/^[a-z0-9]([-.a-z0-9]{0,30}[a-z0-9])?$/),
      }),
      (ref) => {
        const { namespace, ...rest } = ref;
        const clean = namespace ? ref : rest;
        expect(parseRefKey(refKey(clean))).toEqual(clean);
      },
    ),
  );
  expect(() => parseRefKey("ns/")).toThrow(/is not an object key/);
});
