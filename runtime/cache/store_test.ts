import { expect } from "expect";
import fc from "fast-check";
import type { KubeObject } from "../../kube/object.ts";
import { CONFIG_MAP, NODE } from "../../kube/kinds.ts";
import { Store } from "./store.ts";

const name = (object: KubeObject) => `${object.metadata?.namespace}/${object.metadata?.name}`;
const obj = (
  name: string,
  rv: string,
  extra: Partial<NonNullable<KubeObject["metadata"]>> = {},
) => ({
  metadata: { name, namespace: "ns", resourceVersion: rv, ...extra },
});

Deno.test("store: keys, upserts by resourceVersion, owner index, label queries", () => {
  const store = new Store<KubeObject>(CONFIG_MAP);
  expect(store.upsert(obj("a", "1", { labels: { app: "x" } }))?.type).toBe("added");
  expect(store.upsert(obj("a", "1"))).toBeUndefined();
  expect(
    store.upsert(
      obj("a", "2", {
        labels: { app: "x" },
        ownerReferences: [{ apiVersion: "v1", kind: "K", name: "o", uid: "u1" }],
      }),
    )?.type,
  )
    .toBe("updated");
  store.upsert(
    obj("b", "3", { ownerReferences: [{ apiVersion: "v1", kind: "K", name: "o", uid: "u1" }] }),
  );
  expect(store.ownedBy("u1").map(name).sort()).toEqual(["ns/a", "ns/b"]);
  expect(store.list({ labelSelector: "app=x" }).map(name)).toEqual(["ns/a"]);
  expect(store.list({ namespace: "other" })).toEqual([]);
  expect(store.remove(obj("a", "4"))?.type).toBe("deleted");
  expect(store.ownedBy("u1").map(name)).toEqual(["ns/b"]);
  expect(store.get("ns", "b")?.metadata?.resourceVersion).toBe("3");
  expect(store.get("other", "b")).toBeUndefined();
});

Deno.test("store: a cluster-scoped kind's objects are found by name alone", () => {
  const nodes = new Store<KubeObject>(NODE);
  nodes.upsert({ metadata: { name: "w1", resourceVersion: "1" } });
  expect(nodes.get(undefined, "w1")?.metadata?.name).toBe("w1");
  // A namespace asked for a cluster-scoped kind does not hide it (there is none to match).
  expect(nodes.get("ns", "w1")?.metadata?.name).toBe("w1");
});

Deno.test("store: replace reports what changed, appeared and vanished", () => {
  const store = new Store<KubeObject>(CONFIG_MAP);
  store.upsert(obj("keep", "1"));
  store.upsert(obj("change", "1"));
  store.upsert(obj("gone", "1"));
  const changes = store.replace([obj("keep", "1"), obj("change", "2"), obj("new", "3")]);
  expect(changes.map((c) => `${c.type}:${c.object.metadata?.name}`).sort()).toEqual([
    "added:new",
    "deleted:gone",
    "updated:change",
  ]);
  expect(store.size).toBe(3);
});

Deno.test("store: a write's answer goes in only when it is newer than what the cache has", () => {
  const store = new Store<KubeObject>(CONFIG_MAP);
  expect(store.upsertIfNewer(obj("a", "5"))?.type).toBe("added");
  expect(store.upsertIfNewer(obj("a", "4"))).toBeUndefined();
  expect(store.upsertIfNewer(obj("a", "5"))).toBeUndefined();
  expect(store.upsertIfNewer(obj("a", "6"))?.type).toBe("updated");
  expect(store.upsertIfNewer(obj("a", "opaque-7"))).toBeUndefined();
  expect(store.get("ns", "a")?.metadata?.resourceVersion).toBe("6");
  // A late watch event cannot roll it back either.
  expect(store.upsert(obj("a", "3"))).toBeUndefined();
  expect(store.get("ns", "a")?.metadata?.resourceVersion).toBe("6");
});

Deno.test("store: the owner index agrees with the objects through any upserts and removals", () => {
  const owners = ["u1", "u2", "u3"];
  fc.assert(fc.property(
    fc.array(
      fc.record({
        name: fc.constantFrom("a", "b", "c", "d"),
        owners: fc.subarray(owners),
        remove: fc.boolean(),
      }),
      { maxLength: 40 },
    ),
    (steps) => {
      const store = new Store<KubeObject>(CONFIG_MAP);
      let rv = 0;
      for (const step of steps) {
        const ownerReferences = step.owners.map((uid) => ({
          apiVersion: "v1",
          kind: "K",
          name: uid,
          uid,
        }));
        const object = obj(step.name, String(++rv), { ownerReferences });
        if (step.remove) store.remove(object);
        else store.upsert(object);
      }
      for (const uid of owners) {
        const expected = store.list().filter((o) =>
          o.metadata?.ownerReferences?.some((ref) => ref.uid === uid)
        ).map(name).sort();
        expect(store.ownedBy(uid).map(name).sort()).toEqual(expected);
      }
    },
  ));
});

Deno.test("store: list stops at its limit, counting only what matches, oldest first", () => {
  const store = new Store<KubeObject>(CONFIG_MAP);
  for (let i = 0; i < 10; i++) {
    store.upsert(obj(`o-${i}`, String(i + 1), { labels: { even: String(i % 2 === 0) } }));
  }
  expect(store.list({ limit: 3 }).map(name)).toEqual(["ns/o-0", "ns/o-1", "ns/o-2"]);
  expect(store.list({ limit: 2, labelSelector: "even=false" }).map(name)).toEqual([
    "ns/o-1",
    "ns/o-3",
  ]);
  expect(store.list({ limit: 100 }).length).toBe(10);
  expect(store.list({ limit: 0 })).toEqual([]);
  expect(store.list({ limit: 5, namespace: "other" })).toEqual([]);
});
