import { expect } from "expect";
import type { KubeObject } from "../../kube/object.ts";
import type { Resource } from "../../kube/resource.ts";
import { BulkWrites } from "./bulk_writes.ts";
import { cause, priorityOf } from "./cause.ts";
import { inLaneOf, ownerKeysToVisit } from "./change_routes.ts";
import { VisitNews } from "./visit_news.ts";

const PARENT: Resource = {
  group: "pt.example.com",
  version: "v1alpha1",
  kind: "Ptemplate",
  plural: "ptemplates",
  namespaced: true,
};
const keyOf = (name: string) => `Ptemplate.pt.example.com/ns/${name}`;

function child(resourceVersion: string, ...controllers: string[]): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: "c",
      namespace: "ns",
      uid: "c-uid",
      resourceVersion,
      ownerReferences: controllers.map((name) => ({
        apiVersion: "pt.example.com/v1alpha1",
        kind: "Ptemplate",
        name,
        uid: `${name}-uid`,
        controller: true,
      })),
    },
  };
}

Deno.test("a child changed during its parent's visit is held, for the new copy and the old alike", () => {
  const news = new VisitNews();
  news.begin(keyOf("p"));
  const change = { type: "updated" as const, old: child("1", "p"), object: child("2", "p") };
  expect(ownerKeysToVisit(change, PARENT, news)).toEqual([]);
  // The visit wrote that version itself: nothing to look at again.
  news.made(keyOf("p"), "c-uid@2");
  expect(news.end(keyOf("p"))).toEqual([]);
});

Deno.test("outside a visit, a changed child visits its parent once", () => {
  const change = { type: "updated" as const, old: child("1", "p"), object: child("2", "p") };
  expect(ownerKeysToVisit(change, PARENT, new VisitNews())).toEqual([keyOf("p")]);
});

Deno.test("a child that changed hands visits the parent it left, even while the new one visits", () => {
  const news = new VisitNews();
  news.begin(keyOf("q"));
  const change = { type: "updated" as const, old: child("1", "p"), object: child("2", "q") };
  expect(ownerKeysToVisit(change, PARENT, news)).toEqual([keyOf("p")]);
});

Deno.test("a deleted child visits its parent, visit or not", () => {
  const news = new VisitNews();
  news.begin(keyOf("p"));
  const change = { type: "deleted" as const, object: child("3", "p") };
  expect(ownerKeysToVisit(change, PARENT, news)).toEqual([keyOf("p")]);
});

Deno.test("a child no parent of the kind controls visits no one", () => {
  const change = { type: "added" as const, object: child("1") };
  expect(ownerKeysToVisit(change, PARENT, new VisitNews())).toEqual([]);
});

Deno.test("a change bulk work of ours made is bulk work for whoever hears of it; others keep their lane", () => {
  const bulk = new BulkWrites();
  bulk.wrote("c-uid@2");
  const ours = { type: "updated" as const, old: child("1", "p"), object: child("2", "p") };
  const theirs = { type: "updated" as const, old: child("2", "p"), object: child("3", "p") };
  const because = cause("watched", { object: "ConfigMap ns/c", change: "data" });
  expect(priorityOf(inLaneOf(because, ours, bulk))).toBe("bulk");
  expect(priorityOf(inLaneOf(because, theirs, bulk))).toBe("edit");
  expect(priorityOf(inLaneOf(because, ours, undefined))).toBe("edit");
  // A deletion is always news in its own lane.
  expect(priorityOf(inLaneOf(because, { type: "deleted", object: child("2", "p") }, bulk)))
    .toBe("edit");
});
