import { expect } from "expect";
import fc from "fast-check";
import { backoffDelayMs, KeyedBackoff, ReconnectBackoff } from "./backoff.ts";

Deno.test("reconnect delays double from 0.8 s and never pass 30 s, jitter included", () => {
  fc.assert(
    fc.property(
      fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), {
        minLength: 1,
        maxLength: 40,
      }),
      (draws) => {
        let i = 0;
        const backoff = new ReconnectBackoff(800, 30_000, 0.5, 120_000, () => draws[i]);
        for (; i < draws.length; i++) {
          const bound = Math.min(800 * 2 ** i, 30_000);
          const delay = backoff.next();
          expect(delay).toBeLessThanOrEqual(bound);
          expect(delay).toBeGreaterThanOrEqual(bound / 2);
          expect(delay).toBeLessThanOrEqual(30_000);
        }
      },
    ),
  );
});

Deno.test("the jitter spreads retries over the lower half of each bound", () => {
  const top = new ReconnectBackoff(800, 30_000, 0.5, 120_000, () => 0);
  const bottom = new ReconnectBackoff(800, 30_000, 0.5, 120_000, () => 0.999999);
  const tops = Array.from({ length: 8 }, () => top.next());
  expect(tops).toEqual([800, 1600, 3200, 6400, 12_800, 25_600, 30_000, 30_000]);
  const bottoms = Array.from({ length: 8 }, () => Math.round(bottom.next()));
  expect(bottoms).toEqual([400, 800, 1600, 3200, 6400, 12_800, 15_000, 15_000]);
});

Deno.test("a connection healthy for two minutes starts the delays over", () => {
  const backoff = new ReconnectBackoff(800, 30_000, 0.5, 120_000, () => 0);
  for (let i = 0; i < 10; i++) backoff.next(1_000);
  expect(backoff.next(119_999)).toBe(30_000);
  expect(backoff.next(120_000)).toBe(800);
  expect(backoff.next()).toBe(1600);
  backoff.reset();
  expect(backoff.next()).toBe(800);
});

Deno.test("per-key failure delays double from 5 ms to their cap and reset on forget", () => {
  const backoff = new KeyedBackoff(5, 1_000);
  expect(Array.from({ length: 9 }, () => backoff.next("a"))).toEqual([
    5,
    10,
    20,
    40,
    80,
    160,
    320,
    640,
    1000,
  ]);
  expect(backoff.next("b")).toBe(5);
  expect(backoff.failures("a")).toBe(9);
  backoff.forget("a");
  expect(backoff.next("a")).toBe(5);
});

Deno.test("a retry's delay stays between (1 − jitter) and all of its bound", () => {
  const backoff = { initialMs: 100, maxMs: 5_000, jitter: 0.2 };
  for (const [attempt, bound] of [[0, 100], [1, 200], [5, 3_200], [6, 5_000], [2000, 5_000]]) {
    expect(backoffDelayMs(attempt, backoff, () => 0)).toBe(bound);
    expect(backoffDelayMs(attempt, backoff, () => 0.999999)).toBeCloseTo(bound * 0.8, 0);
  }
});
