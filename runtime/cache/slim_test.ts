import { expect } from "expect";
import type { KubeObject } from "../../kube/object.ts";
import { slim } from "./slim.ts";

Deno.test("slim keeps who manages what, drops the field sets and last-applied", () => {
  const object: KubeObject = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: "c",
      annotations: { "kubectl.kubernetes.io/last-applied-configuration": "{}", keep: "me" },
      managedFields: [
        {
          manager: "kubectl",
          operation: "Apply",
          fieldsType: "FieldsV1",
          fieldsV1: { "f:data": {} },
        },
        { manager: "kcm", operation: "Update", subresource: "status", fieldsV1: {} },
      ],
    },
  };
  expect(slim(object)).toBe(object);
  expect(object.metadata).toEqual({
    name: "c",
    annotations: { keep: "me" },
    managedFields: [
      { manager: "kubectl", operation: "Apply" },
      { manager: "kcm", operation: "Update", subresource: "status" },
    ],
  });
});

Deno.test("slim drops a node's images and leaves other objects' status alone", () => {
  const node = { kind: "Node", metadata: { name: "n" }, status: { images: [{}], capacity: {} } };
  expect(slim(node as KubeObject)).toEqual({
    kind: "Node",
    metadata: { name: "n" },
    status: { capacity: {} },
  });
  const other = { kind: "Thing", metadata: { name: "t" }, status: { images: ["a"] } };
  expect(slim(other as KubeObject)).toEqual(other);
});

Deno.test("slim keeps other managers' field sets for children's kinds", () => {
  const entries = [
    { manager: "ours", operation: "Apply", fieldsV1: { "f:spec": {} } },
    { manager: "kubectl-patch", operation: "Update", fieldsV1: { "f:spec": { "f:x": {} } } },
    { manager: "kcm", operation: "Update", subresource: "status", fieldsV1: { "f:status": {} } },
  ];
  const object = { kind: "DaemonSet", metadata: { name: "d", managedFields: entries } };
  slim(object as KubeObject, { keepFieldSetsExcept: new Set(["ours"]) });
  expect(object.metadata.managedFields).toEqual([
    { manager: "ours", operation: "Apply" },
    entries[1],
    { manager: "kcm", operation: "Update", subresource: "status" },
  ]);
});
