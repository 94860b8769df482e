import { expect } from "expect";
import { DAEMON_SET } from "../../kube/kinds.ts";
import { refTo } from "../../kube/object_ref.ts";
import { childProblem, ownershipOf, ownershipProblem } from "./ownership.ts";

const PARENT = { group: "pt.example.com", kind: "Ptemplate", namespace: "ns", name: "p", uid: "p" };
const ref = (uid: string, controller?: boolean, name = `owner-${uid}`) => ({
  apiVersion: "pt.example.com/v1alpha1",
  kind: "Ptemplate",
  name,
  uid,
  controller,
});
const object = (...ownerReferences: ReturnType<typeof ref>[]) => ({
  metadata: { name: "child", namespace: "ns", ownerReferences },
});
const CHILD = refTo(DAEMON_SET, { namespace: "ns", name: "child" });

Deno.test("ownership: missing, ours, someone else's, nobody's", () => {
  expect(ownershipOf(undefined, PARENT)).toEqual({ state: "absent" });
  expect(ownershipOf(object(ref("p", true)), PARENT)).toEqual({ state: "ours" });
  expect(ownershipOf(object(ref("x", true), ref("p")), PARENT)).toEqual({
    state: "controlled-elsewhere",
    controller: ref("x", true),
  });
  // An owner reference that is not the controller's does not make it ours.
  expect(ownershipOf(object(ref("p", false)), PARENT)).toEqual({ state: "uncontrolled" });
  expect(ownershipOf(object(), PARENT)).toEqual({ state: "uncontrolled" });
});

Deno.test("ownership goes by uid when the parent's is known, else by kind and name", () => {
  // The parent's namesake from before (another uid) is not this parent.
  expect(ownershipOf(object(ref("old", true, "p")), PARENT).state).toBe("controlled-elsewhere");
  // Before the parent exists (admission): its kind, namespace and name decide.
  const { uid: _, ...unborn } = PARENT;
  expect(ownershipOf(object(ref("any", true, "p")), unborn).state).toBe("ours");
  expect(ownershipOf(object(ref("any", true, "q")), unborn).state).toBe("controlled-elsewhere");
  const otherKind = { ...ref("any", true, "p"), kind: "Memcached" };
  expect(ownershipOf(object(otherKind), unborn).state).toBe("controlled-elsewhere");
});

Deno.test("ownership problems name the object, its controller, and what to do", () => {
  const theirs = object(ref("x", true));
  expect(ownershipProblem(CHILD, ownershipOf(theirs, PARENT))).toBe(
    "DaemonSet ns/child already exists and is controlled by Ptemplate owner-x; it is left " +
      "alone: rename or delete it (or the Ptemplate), and it is created anew",
  );
  const nobodys = object();
  expect(ownershipProblem(CHILD, ownershipOf(nobodys, PARENT))).toMatch(
    /^DaemonSet ns\/child already exists and is not ours \(no controller owner reference\)/,
  );
  expect(ownershipProblem(CHILD, { state: "ours" })).toBeUndefined();
});

Deno.test("a child problem is reported only for an object in the way", () => {
  expect(childProblem("ds", DAEMON_SET, undefined, PARENT)).toBeUndefined();
  expect(childProblem("ds", DAEMON_SET, object(ref("p", true)), PARENT)).toBeUndefined();
  expect(childProblem("ds", DAEMON_SET, object(ref("x", true)), PARENT)).toEqual({
    plugin: "ds",
    kind: "DaemonSet",
    name: "child",
    reason: "ChildOwnedElsewhere",
    message: expect.stringMatching(/^DaemonSet ns\/child already exists and is controlled by/),
  });
  expect(childProblem("ds", DAEMON_SET, object(), PARENT)?.reason).toBe("ChildNameTaken");
});
