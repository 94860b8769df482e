import { expect } from "expect";
import { VisitHistory, type VisitRecord } from "./visit_history.ts";

const visit = (key: string, n: number): VisitRecord => ({
  at: new Date(n).toISOString(),
  controller: "c",
  key,
  causes: [`cause ${n}`],
  moreCauses: 0,
  priority: "edit",
  waitedMs: 0,
  tookMs: 1,
  outcome: "reconciled",
  writes: [],
  events: [],
  conditions: [],
});

Deno.test("a key's visits come back oldest first", () => {
  const history = new VisitHistory(10);
  for (let n = 0; n < 6; n++) history.add(visit(n % 2 ? "odd" : "even", n));
  expect(history.of("odd").map((v) => v.causes[0])).toEqual(["cause 1", "cause 3", "cause 5"]);
  expect(history.of("none")).toEqual([]);
});

Deno.test("the ring keeps a fixed number of visits, whatever the number of keys", () => {
  const history = new VisitHistory(3);
  for (let n = 0; n < 1000; n++) history.add(visit(`k${n}`, n));
  expect(history.of("k0")).toEqual([]);
  expect(history.of("k999").length).toBe(1);
  expect(["k997", "k998", "k999"].map((k) => history.of(k).length)).toEqual([1, 1, 1]);
  expect(history.capacity).toBe(3);
  expect(new VisitHistory(0).capacity).toBe(1);
});
