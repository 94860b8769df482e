import { expect } from "expect";
import type { KubeObject } from "../../kube/object.ts";
import type { Resource } from "../../kube/resource.ts";
import { BulkWrites } from "./bulk_writes.ts";
import { cause, priorityOf } from "./cause.ts";
import { inLaneOf, ownerKeysToVisit, routeChanges } from "./change_routes.ts";
import { CONFIG_MAP } from "../../kube/kinds.ts";
import { inProcessRunner } from "../isolation/mod.ts";
import { log } from "../observe/mod.ts";
import { definePlugin, type Plugin } from "../plugin/mod.ts";
import { BlockedNames } from "./blocked_names.ts";
import { ChildProblems } from "./child_problems.ts";
import { PluginView } from "./plugin_view.ts";
import { FakePool } from "./testdata/fake_pool.ts";
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

Deno.test("a plugin's own status write is no news to it; an edit relisted with it, or another's status, is", () => {
  const THING: Resource = { ...CONFIG_MAP, kind: "ConfigMap" };
  const plugin = definePlugin({ name: "writer", for: THING, reconcile: () => ({ status: {} }) });
  const pool = new FakePool();
  const news = new VisitNews();
  const causes: string[] = [];
  routeChanges(plugin as Plugin, {
    pool,
    runner: inProcessRunner(plugin as Plugin),
    view: new PluginView(plugin as Plugin),
    problems: new ChildProblems(),
    blocked: new BlockedNames(),
    news,
    log: log("change-routes-test"),
  }, {
    enqueue: (_, because) => causes.push(`${because.kind} (${because.change})`),
    enqueueAll: () => {},
    gone: () => {},
  });
  const key = "ConfigMap/ns/a";
  const put = (object: KubeObject) => pool.put(THING, object);
  /** The version the next write of `object` leaves, as its answer names it. */
  const next = (o: KubeObject) => `${o.metadata?.uid}@${Number(o.metadata?.resourceVersion) + 1}`;
  let a = put({ metadata: { name: "a", namespace: "ns" } });
  expect(causes.splice(0)).toEqual(["created (created)"]);

  // Its status write's answer came before the echo: dropped.
  news.wrote(next(a));
  a = put({ ...a, status: { n: 1 } } as KubeObject);
  expect(causes.splice(0)).toEqual([]);

  // A relist brings the echo's version with someone's label on it: visited.
  news.wrote(next(a));
  a = put(
    { ...a, metadata: { ...a.metadata, labels: { x: "y" } }, status: { n: 2 } } as KubeObject,
  );
  expect(causes.splice(0)).toEqual(["updated (metadata)"]);

  // During its visit: the echo (before the answer) is held and dropped; another's status visits
  // again when the visit ends, for its own cause.
  news.begin(key);
  news.made(key, next(a));
  a = put({ ...a, status: { n: 3 } } as KubeObject);
  a = put({ ...a, status: { n: 3, theirs: true } } as KubeObject);
  expect(causes.splice(0)).toEqual([]);
  expect(news.end(key).map((c) => `${c.kind} (${c.change})`)).toEqual(["updated (status)"]);
});
