import { expect } from "expect";
import { ownershipOf, ownershipProblem } from "./ownership.ts";

const ref = (uid: string, controller?: boolean) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  name: `owner-${uid}`,
  uid,
  controller,
});
const object = (...ownerReferences: ReturnType<typeof ref>[]) => ({
  metadata: { name: "child", namespace: "ns", ownerReferences },
});

Deno.test("ownership: absent, ours, someone else's, nobody's", () => {
  expect(ownershipOf(undefined, "p")).toEqual({ state: "absent" });
  expect(ownershipOf(object(ref("p", true)), "p")).toEqual({ state: "ours" });
  expect(ownershipOf(object(ref("x", true), ref("p")), "p")).toEqual({
    state: "controlled-elsewhere",
    controller: ref("x", true),
  });
  // An owner reference that is not the controller's does not make it ours.
  expect(ownershipOf(object(ref("p", false)), "p")).toEqual({ state: "uncontrolled" });
  expect(ownershipOf(object(), "p")).toEqual({ state: "uncontrolled" });
});

Deno.test("ownership problems name the object, its controller, and what to do", () => {
  const theirs = object(ref("x", true));
  expect(ownershipProblem("DaemonSet", theirs, ownershipOf(theirs, "p"))).toBe(
    "DaemonSet ns/child already exists and is controlled by ConfigMap owner-x; it is left " +
      "alone: rename or delete it (or the ConfigMap), and it is created anew",
  );
  const nobodys = object();
  expect(ownershipProblem("Module", nobodys, ownershipOf(nobodys, "p"))).toMatch(
    /^Module ns\/child already exists and is not ours \(no controller owner reference\)/,
  );
  expect(ownershipProblem("Module", nobodys, { state: "ours" })).toBeUndefined();
});
