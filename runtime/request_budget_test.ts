import { expect } from "expect";
import { RequestBudget } from "./request_budget.ts";

Deno.test("a budget lets a burst through, then qps, and never queues", () => {
  let now = 0;
  const budget = new RequestBudget({ qps: 10, burst: 3 }, () => now);
  expect([1, 2, 3, 4].map(() => budget.tryTake())).toEqual([true, true, true, false]);
  now += 100; // one token back
  expect([budget.tryTake(), budget.tryTake()]).toEqual([true, false]);
  now += 10_000; // refills only up to the burst
  expect([1, 2, 3, 4].map(() => budget.tryTake())).toEqual([true, true, true, false]);
  expect({ spent: budget.spent, refused: budget.refused }).toEqual({ spent: 7, refused: 3 });
  expect(budget.boundFor(30_000)).toBe(303);
});

Deno.test("a budget is refused when it makes no sense", () => {
  expect(() => new RequestBudget({ qps: 0, burst: 1 })).toThrow(/qps/);
  expect(() => new RequestBudget({ qps: 1, burst: 0.5 })).toThrow(/burst/);
});
