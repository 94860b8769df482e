import * as FakeTimers from "@sinonjs/fake-timers";
import { expect } from "expect";

type Clock = ReturnType<typeof FakeTimers.install>;
import fc from "fast-check";
import { RateLimiter } from "./rate_limiter.ts";

/** Sends `count` requests as fast as the limiter lets them; returns when each left (ms). */
async function sendTimes(
  limiter: RateLimiter,
  count: number,
  clock: Clock,
): Promise<number[]> {
  const times: number[] = [];
  const all = Array.from(
    { length: count },
    () => limiter.wait().then(() => times.push(performance.now())),
  );
  while (times.length < count) await clock.tickAsync(5);
  await Promise.all(all);
  return times;
}

function withClock(fn: (clock: Clock) => Promise<void>) {
  return async () => {
    const clock = FakeTimers.install({ toFake: ["setTimeout", "clearTimeout", "performance"] });
    try {
      await fn(clock);
    } finally {
      clock.uninstall();
    }
  };
}

Deno.test(
  "a burst goes at once, then requests leave at qps",
  withClock(async (clock) => {
    const limiter = new RateLimiter({ qps: 5, burst: 10 });
    const start = performance.now();
    const times = (await sendTimes(limiter, 20, clock)).map((t) => t - start);
    expect(times.slice(0, 10).every((t) => t < 10)).toBe(true);
    // The rest at 5 per second, once the one-second window has room.
    expect(times[19]).toBeGreaterThanOrEqual(2_000);
    expect(times[19]).toBeLessThan(3_100);
  }),
);

Deno.test("no window of a second holds more than the burst (or qps, when larger)", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 1, max: 50 }),
      fc.integer({ min: 1, max: 20 }),
      fc.integer({ min: 1, max: 80 }),
      async (qps, burst, count) => {
        const clock = FakeTimers.install({
          toFake: ["setTimeout", "clearTimeout", "performance"],
        });
        try {
          const times = await sendTimes(new RateLimiter({ qps, burst }), count, clock);
          const perWindow = Math.max(burst, qps);
          for (let i = perWindow; i < times.length; i++) {
            expect(times[i] - times[i - perWindow]).toBeGreaterThanOrEqual(1_000);
          }
        } finally {
          clock.uninstall();
        }
      },
    ),
    { numRuns: 40 },
  );
});

Deno.test(
  "requests keep their order, urgent ones first; an aborted one gives up its turn",
  // On fake time: however slowly this machine runs the lines below, no token is refilled
  // between them, so only the limiter's rules decide the order.
  withClock(async (clock) => {
    const limiter = new RateLimiter({ qps: 1000, burst: 1 });
    const order: string[] = [];
    const abort = new AbortController();
    const a = limiter.wait().then(() => order.push("a"));
    const b = limiter.wait(abort.signal).then(() => order.push("b"), () => order.push("b aborted"));
    const c = limiter.wait().then(() => order.push("c"));
    const lease = limiter.wait(undefined, { urgent: true }).then(() => order.push("lease"));
    abort.abort();
    while (order.length < 4) await clock.tickAsync(1);
    await Promise.all([a, b, c, lease]);
    expect(order).toEqual(["a", "b aborted", "lease", "c"]);
  }),
);

Deno.test("nonsense limits are refused by name", () => {
  expect(() => new RateLimiter({ qps: 0, burst: 1 })).toThrow(/qps must be a positive number/);
  expect(() => new RateLimiter({ qps: 1, burst: 0.5 })).toThrow(/burst must be a whole number/);
});

Deno.test(
  "tryTake takes a free turn or none, and never queues",
  // On fake time: a slow machine must not hand out turns between the lines.
  withClock(async (clock) => {
    const limiter = new RateLimiter({ qps: 20, burst: 3 });
    expect([1, 2, 3, 4].map(() => limiter.tryTake())).toEqual([true, true, true, false]);
    expect(limiter.refused).toBe(1);
    await clock.tickAsync(120); // two turns come back
    expect([limiter.tryTake(), limiter.tryTake(), limiter.tryTake()]).toEqual([true, true, false]);
    // A waiter is first in line: a free turn is its, not tryTake's. After 31 ms the turn is
    // there, and the waiter's wake-up is still a microtask away (tick, not tickAsync).
    let waited = false;
    const waiting = limiter.wait().then(() => waited = true);
    clock.tick(31);
    expect(waited).toBe(false);
    expect(limiter.tryTake()).toBe(false);
    while (!waited) await clock.tickAsync(1);
    await waiting;
    expect(limiter.refused).toBe(3);
  }),
);
