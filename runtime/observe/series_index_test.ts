import { expect } from "expect";
import { SeriesIndex } from "./series_index.ts";

Deno.test("a series is found by its label values, a missing label being the empty value", () => {
  const index = new SeriesIndex<string>(["controller", "result"]);
  index.set({ controller: "a", result: "success" }, "a/success");
  index.set({ controller: "a" }, "a/");
  index.set({ controller: "b", result: "success" }, "b/success");
  expect(index.get({ controller: "a", result: "success" })).toBe("a/success");
  expect(index.get({ controller: "a", result: "" })).toBe("a/");
  expect(index.get({ controller: "b", result: "error" })).toBeUndefined();
  expect(index.get({ controller: "c", result: "success" })).toBeUndefined();
  expect([...index.values()]).toEqual(["a/success", "a/", "b/success"]);
});

Deno.test("values that a joined key would confuse stay apart", () => {
  const index = new SeriesIndex<number>(["x", "y"]);
  index.set({ x: "a,b", y: "c" }, 1);
  index.set({ x: "a", y: "b,c" }, 2);
  index.set({ x: '"a"', y: "" }, 3);
  expect(index.get({ x: "a,b", y: "c" })).toBe(1);
  expect(index.get({ x: "a", y: "b,c" })).toBe(2);
  expect(index.get({ x: '"a"' })).toBe(3);
});

Deno.test("a family without labels has one series", () => {
  const index = new SeriesIndex<string>([]);
  expect(index.get({})).toBeUndefined();
  index.set({}, "only");
  index.set({}, "again");
  expect(index.get({})).toBe("again");
  expect([...index.values()]).toEqual(["again"]);
  index.delete({});
  expect([...index.values()]).toEqual([]);
});

Deno.test("setting a series again replaces it, and deleting one leaves the others in order", () => {
  const index = new SeriesIndex<string>(["kind", "name"]);
  index.set({ kind: "Pod", name: "a" }, "1");
  index.set({ kind: "Pod", name: "b" }, "2");
  index.set({ kind: "Node", name: "a" }, "3");
  index.set({ kind: "Pod", name: "a" }, "4");
  expect([...index.values()]).toEqual(["2", "3", "4"]);
  index.delete({ kind: "Pod", name: "b" });
  index.delete({ kind: "Pod", name: "missing" });
  index.delete({ kind: "Service", name: "a" });
  expect([...index.values()]).toEqual(["3", "4"]);
  expect(index.get({ kind: "Pod", name: "a" })).toBe("4");
});

Deno.test("deleting the last series under a label value drops its level, so it holds no memory", () => {
  const index = new SeriesIndex<number>(["namespace", "name", "kind"]);
  for (let i = 0; i < 100; i++) index.set({ namespace: `ns-${i}`, name: "x", kind: "Pod" }, i);
  for (let i = 0; i < 100; i++) index.delete({ namespace: `ns-${i}`, name: "x", kind: "Pod" });
  expect([...index.values()]).toEqual([]);
  expect(index.levels).toBe(1);
  // Made again after the prune: found as any other.
  index.set({ namespace: "ns-1", name: "x", kind: "Pod" }, 7);
  expect(index.get({ namespace: "ns-1", name: "x", kind: "Pod" })).toBe(7);
  expect(index.levels).toBe(3);
  index.delete({ namespace: "ns-1", name: "x", kind: "Pod" });
  expect(index.levels).toBe(1);
});
