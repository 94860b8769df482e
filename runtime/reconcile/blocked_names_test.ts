import { expect } from "expect";
import { BlockedNames } from "./blocked_names.ts";

Deno.test("the parents waiting for a taken name look again once, when it changes", () => {
  const blocked = new BlockedNames();
  blocked.wait("DaemonSet/ns/x", "a");
  blocked.wait("DaemonSet/ns/x", "b");
  blocked.wait("DaemonSet/ns/x", "a");
  expect(blocked.release("DaemonSet/ns/x")).toEqual(["a", "b"]);
  // Released: a second change wakes no one until someone waits again.
  expect(blocked.release("DaemonSet/ns/x")).toEqual([]);
  expect(blocked.release("DaemonSet/ns/other")).toEqual([]);
});

Deno.test("a parent that is gone waits for nothing, and keeps no entry alive", () => {
  const blocked = new BlockedNames();
  blocked.wait("Module/ns/x", "a");
  blocked.wait("DaemonSet/ns/x", "a");
  blocked.wait("DaemonSet/ns/x", "b");
  blocked.forget("a");
  expect(blocked.size).toBe(1);
  expect(blocked.release("DaemonSet/ns/x")).toEqual(["b"]);
  expect(blocked.size).toBe(0);
});
