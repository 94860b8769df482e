import { expect } from "expect";
import { CONFIG_MAP, NODE } from "../../kube/kinds.ts";
import type { Informer } from "../cache/mod.ts";
import { StaleCacheError } from "../cache/mod.ts";
import { controllerKeys, freshnessFence } from "./controller.ts";

const PARENT = {
  group: "x.example.com",
  version: "v1",
  kind: "Parent",
  plural: "parents",
  namespaced: true,
};
const owner = (kind: string, apiVersion: string, controller?: boolean) => ({
  apiVersion,
  kind,
  name: `${kind.toLowerCase()}-1`,
  uid: "u",
  controller,
});

Deno.test("a child's change reconciles the parent its controller reference names", () => {
  const child = (...ownerReferences: ReturnType<typeof owner>[]) => ({
    metadata: { name: "c", namespace: "ns", ownerReferences },
  });
  expect(controllerKeys(child(owner("Parent", "x.example.com/v1", true)), PARENT)).toEqual([
    "Parent.x.example.com/ns/parent-1",
  ]);
  // Only the controller, of this kind and API version.
  expect(controllerKeys(child(owner("Parent", "x.example.com/v1")), PARENT)).toEqual([]);
  expect(controllerKeys(child(owner("Parent", "x.example.com/v2", true)), PARENT)).toEqual([]);
  expect(controllerKeys(child(owner("Other", "x.example.com/v1", true)), PARENT)).toEqual([]);
  expect(controllerKeys({ metadata: { name: "c" } }, PARENT)).toEqual([]);
  // A cluster-scoped parent has no namespace in its key.
  expect(controllerKeys(child(owner("Node", "v1", true)), NODE)).toEqual(["Node/node-1"]);
});

Deno.test("the freshness fence refuses a write once a cache it read has fallen behind", () => {
  const cache = (fresh = true, epoch = 0) =>
    ({ fresh, epoch, resource: CONFIG_MAP, namespace: "ns" }) as unknown as Informer & {
      fresh: boolean;
      epoch: number;
    };
  const declared = cache();
  const { fence } = freshnessFence([declared]);
  expect(() => fence()).not.toThrow();
  // Fell behind and listed again meanwhile: what was read before is of another epoch.
  declared.epoch = 1;
  expect(() => fence()).toThrow(StaleCacheError);
  // A cache read on demand counts from when it was read.
  const later = cache(true, 7);
  const second = freshnessFence([]);
  second.read(later);
  expect(() => second.fence()).not.toThrow();
  later.fresh = false;
  expect(() => second.fence()).toThrow(/is behind the API server/);
});
