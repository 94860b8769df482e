import { expect } from "expect";
import type { KubeObject } from "../../kube/object.ts";
import { topLevelPatch } from "./top_level_patch.ts";

Deno.test("the patch adds, replaces and removes whole top-level fields, escaping their names", () => {
  const before = {
    apiVersion: "v1",
    kind: "X",
    metadata: { name: "a" },
    spec: { a: 1 },
    "a/b~": 1,
  };
  const after = {
    apiVersion: "v1",
    kind: "X",
    metadata: { name: "a", labels: { x: "y" } },
    data: 2,
  };
  expect(topLevelPatch(before as KubeObject, after as KubeObject)).toEqual([
    { op: "replace", path: "/metadata", value: { name: "a", labels: { x: "y" } } },
    { op: "remove", path: "/spec" },
    { op: "remove", path: "/a~1b~0" },
    { op: "add", path: "/data", value: 2 },
  ]);
  expect(topLevelPatch(before as KubeObject, structuredClone(before) as KubeObject)).toEqual([]);
});
