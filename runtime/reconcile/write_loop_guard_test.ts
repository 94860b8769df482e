import * as FakeTimers from "@sinonjs/fake-timers";
import { expect } from "expect";

type Clock = ReturnType<typeof FakeTimers.install>;
import { WriteLoopGuard } from "./write_loop_guard.ts";

function withClock(fn: (clock: Clock) => void) {
  return () => {
    const clock = FakeTimers.install({ toFake: ["performance", "Date"] });
    try {
      fn(clock);
    } finally {
      clock.uninstall();
    }
  };
}

/** Writes `key` as often as the guard allows, every `everyMs`, for `forMs`; returns the writes. */
function hammer(guard: WriteLoopGuard, clock: Clock, forMs: number) {
  let writes = 0;
  let detected = 0;
  for (let t = 0; t < forMs; t += 10) {
    const verdict = guard.check("p/child", 1);
    if (verdict.allowed) {
      guard.record("p/child", 1);
      writes++;
    } else if (verdict.detected) {
      detected++;
    }
    clock.tick(10);
  }
  return { writes, detected };
}

Deno.test(
  "a loop is stopped after maxWrites in the window, and pauses longer each time",
  withClock((clock) => {
    const guard = new WriteLoopGuard({ maxWrites: 5, windowMs: 10_000, backoffMs: 30_000 });
    // A write every 10 ms for a minute: 5, a 30 s pause, 5 more, then a 60 s pause.
    expect(hammer(guard, clock, 60_000)).toEqual({ writes: 10, detected: 2 });
  }),
);

Deno.test(
  "writes spread out, or for a new generation, are not a loop",
  withClock((clock) => {
    const guard = new WriteLoopGuard({ maxWrites: 5, windowMs: 10_000 });
    for (let i = 0; i < 50; i++) {
      expect(guard.check("p/child", 1).allowed).toBe(true);
      guard.record("p/child", 1);
      clock.tick(2_500);
    }
    for (let generation = 2; generation < 50; generation++) {
      expect(guard.check("p/child", generation).allowed).toBe(true);
      guard.record("p/child", generation);
    }
  }),
);

Deno.test(
  "a refused write says when to come back; a new generation is let through at once",
  withClock((clock) => {
    const guard = new WriteLoopGuard({ maxWrites: 2, windowMs: 10_000, backoffMs: 1_000 });
    guard.record("k", 7);
    guard.record("k", 7);
    expect(guard.check("k", 7)).toEqual({
      allowed: false,
      retryInMs: 1_000,
      detected: true,
      writes: 2,
    });
    clock.tick(400);
    expect(guard.check("k", 7)).toEqual({
      allowed: false,
      retryInMs: 600,
      detected: false,
      writes: 0,
    });
    expect(guard.check("k", 8)).toEqual({ allowed: true });
    guard.forget("k");
    expect(guard.check("k", 7)).toEqual({ allowed: true });
  }),
);

Deno.test(
  "asking is not writing: attempts that failed or changed nothing (never recorded) are no loop",
  withClock((clock) => {
    const guard = new WriteLoopGuard({ maxWrites: 10, windowMs: 10_000 });
    // An API server restarting: a retry every 5 ms doubling, for 30 s, none of them a write.
    for (let delay = 5, t = 0; t < 30_000; t += delay, delay = Math.min(delay * 2, 1_000)) {
      expect(guard.check("p/status", 3).allowed).toBe(true);
      clock.tick(delay);
    }
    // Then the catch-up: the writes that do go through, a handful, are let through.
    for (let i = 0; i < 9; i++) {
      expect(guard.check("p/status", 3).allowed).toBe(true);
      guard.record("p/status", 3);
      clock.tick(100);
    }
    // Only a tenth write that changed something, within the window, is one too many.
    guard.record("p/status", 3);
    expect(guard.check("p/status", 3)).toMatchObject({ allowed: false, detected: true });
  }),
);
