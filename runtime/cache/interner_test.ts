import { expect } from "expect";
import fc from "fast-check";
import { Interner } from "./interner.ts";

const daemonSet = (name: string, uid: string) => ({
  apiVersion: "apps/v1",
  kind: "DaemonSet",
  metadata: {
    name,
    uid,
    labels: { app: name },
    managedFields: [{ manager: "m", operation: "Apply" }],
  },
  spec: {
    template: {
      spec: {
        containers: [{
          name: "c",
          image: "registry.example/c:1",
          terminationMessagePath: "/dev/t",
        }],
        dnsPolicy: "ClusterFirst",
      },
    },
    updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } },
  },
});

Deno.test("equal small subtrees of different objects are one frozen copy; the objects stay their own", () => {
  const interner = new Interner();
  const a = interner.intern(daemonSet("a", "11111111-1111-1111-1111-111111111111"));
  const b = interner.intern(daemonSet("b", "22222222-2222-2222-2222-222222222222"));
  expect(a).toEqual(daemonSet("a", "11111111-1111-1111-1111-111111111111"));
  expect(b.spec.updateStrategy).toBe(a.spec.updateStrategy);
  expect(b.spec.template.spec.containers).toBe(a.spec.template.spec.containers);
  expect(b.metadata.managedFields).toBe(a.metadata.managedFields);
  expect(Object.isFrozen(a.spec.updateStrategy)).toBe(true);
  // A write to what many objects share throws instead of changing them all.
  expect(() => (b.spec.updateStrategy as { type: string }).type = "OnDelete").toThrow(TypeError);
  // What holds a name or a uid is each object's own, and so is the object itself.
  expect(b.metadata).not.toBe(a.metadata);
  expect(Object.isFrozen(a)).toBe(false);
  expect(Object.isFrozen(a.metadata)).toBe(false);
});

Deno.test("interned values equal what they were, whatever the JSON: nothing is mixed up", () => {
  fc.assert(fc.property(fc.array(fc.jsonValue(), { minLength: 1, maxLength: 6 }), (values) => {
    const interner = new Interner();
    const originals = values.map((value) => ({ value }));
    const interned = originals.map((o) => interner.intern(structuredClone(o)));
    expect(interned).toEqual(originals);
  }));
  // Values alike in text but not in type or structure stay apart.
  const interner = new Interner();
  const kept = [
    { x: { a: "1" } },
    { x: { a: 1 } },
    { x: { a: [1] } },
    { x: { a: "1", b: "" } },
    { x: { "a1:": "" } },
    { x: { a: null } },
    { x: { a: true } },
    { x: { a: "t" } },
  ].map((o) => interner.intern(structuredClone(o)));
  expect(kept.map((o) => o.x)).toEqual([
    { a: "1" },
    { a: 1 },
    { a: [1] },
    { a: "1", b: "" },
    { "a1:": "" },
    { a: null },
    { a: true },
    { a: "t" },
  ]);
});

Deno.test("big subtrees are not shared, and the tables start over past their bound", () => {
  const interner = new Interner({ maxEntries: 100 });
  const big = () => ({ spec: { items: Array.from({ length: 200 }, (_, i) => `item-${i}`) } });
  const a = interner.intern(big());
  const b = interner.intern(big());
  expect(b.spec.items).not.toBe(a.spec.items);
  expect(b.spec.items).toEqual(a.spec.items);
  for (let i = 0; i < 300; i++) interner.intern({ spec: { n: `value-${i}` } });
  expect(interner.size.strings).toBeLessThanOrEqual(102);
  expect(interner.size.trees).toBeLessThanOrEqual(102);
});

Deno.test("an object interned again, even after the tables started over, is left as it is", () => {
  const interner = new Interner({ maxEntries: 3 });
  const a = interner.intern(daemonSet("a", "11111111-1111-1111-1111-111111111111"));
  for (let i = 0; i < 10; i++) interner.intern({ spec: { n: `value-${i}`, m: [i] } });
  const b = interner.intern(daemonSet("b", "22222222-2222-2222-2222-222222222222"));
  expect(interner.intern(a)).toEqual(daemonSet("a", "11111111-1111-1111-1111-111111111111"));
  expect(interner.intern(b)).toEqual(daemonSet("b", "22222222-2222-2222-2222-222222222222"));
});

Deno.test("subtrees whose hashes collide are told apart by their contents", () => {
  const interner = new Interner({ maxEntries: 1_000_000 });
  // 300,000 distinct small subtrees: a few of their 31-bit hashes collide.
  const value = (i: number) => ({ x: { a: i, b: `v${i % 7}` } });
  const interned = Array.from({ length: 300_000 }, (_, i) => interner.intern(value(i)));
  expect(interner.size.collided).toBeGreaterThan(0);
  for (let i = 0; i < interned.length; i++) {
    if (interned[i].x.a !== i || interned[i].x.b !== `v${i % 7}`) {
      throw new Error(`mixed up at ${i}`);
    }
  }
  // Equal ones, after all that, are still one copy.
  expect(interner.intern(value(12345)).x).toBe(interned[12345].x);
});

Deno.test("a new version keeps what it has equal with the version it replaces, and has its news", () => {
  const interner = new Interner();
  const uid = "11111111-1111-1111-1111-111111111111";
  const first = interner.intern(daemonSet("a", uid));
  const next = { ...daemonSet("a", uid), status: { observedGeneration: 1, numberReady: 0 } };
  next.metadata.labels = { app: "a2" };
  const kept = interner.intern(structuredClone(next), first);
  expect(kept).toEqual(next);
  // The spec is the old version's, unshared parts and all; the changed labels are the new ones.
  expect(kept.spec).toBe(first.spec);
  expect(kept.metadata.managedFields).toBe(first.metadata.managedFields);
  expect(kept.metadata).not.toBe(first.metadata);
  expect(kept.metadata.labels).not.toBe(first.metadata.labels);
  expect(first).toEqual(daemonSet("a", uid));
});

Deno.test("a subtree kept from the version before is shared with other objects as before", () => {
  const interner = new Interner();
  const first = interner.intern({ spec: { a: { k: "v" }, b: 1 } });
  // `a` is kept from the first version; the new `spec` around it is found equal to other objects'.
  const next = interner.intern({ spec: { a: { k: "v" }, b: 2 } }, first);
  expect(next.spec.a).toBe(first.spec.a);
  const other = interner.intern({ spec: { a: { k: "v" }, b: 2 } });
  expect(other.spec).toBe(next.spec);
  expect(Object.isFrozen(next.spec)).toBe(true);
});

Deno.test("interned beside any version before, values equal what they were", () => {
  // With tables that start over between versions too: what was shared before is no longer known.
  const tables = fc.constantFrom(undefined, 2);
  fc.assert(fc.property(fc.jsonValue(), fc.jsonValue(), fc.jsonValue(), tables, (a, b, c, max) => {
    const interner = new Interner({ maxEntries: max });
    const before = interner.intern({ value: a, same: c });
    const after = interner.intern(structuredClone({ value: b, same: c }), before);
    expect(after).toEqual({ value: b, same: c });
    expect(before).toEqual({ value: a, same: c });
    // A version that is the same again, after it: nothing of it is new.
    const again = interner.intern(structuredClone({ value: b, same: c }), after);
    expect(again).toEqual({ value: b, same: c });
    if (typeof c === "object" && c !== null) expect(again.same).toBe(before.same);
  }));
});
