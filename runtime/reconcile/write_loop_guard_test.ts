import * as FakeTimers from "@sinonjs/fake-timers";
import { expect } from "expect";

import { CONFIG_MAP } from "../../kube/kinds.ts";
import { refTo } from "../../kube/object_ref.ts";
import { WriteLoopGuard, type WriteTarget } from "./write_loop_guard.ts";

type Clock = ReturnType<typeof FakeTimers.install>;

const PARENT = { group: "x.example.com", kind: "P", namespace: "ns", name: "p" };
const CHILD: WriteTarget = {
  writer: "plugin",
  parent: PARENT,
  child: refTo(CONFIG_MAP, { namespace: "ns", name: "child" }),
};
const STATUS: WriteTarget = { writer: "plugin", parent: PARENT };

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
    const verdict = guard.check(CHILD, 1);
    if (verdict.allowed) {
      guard.record(CHILD, 1);
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
      expect(guard.check(CHILD, 1).allowed).toBe(true);
      guard.record(CHILD, 1);
      clock.tick(2_500);
    }
    for (let generation = 2; generation < 50; generation++) {
      expect(guard.check(CHILD, generation).allowed).toBe(true);
      guard.record(CHILD, generation);
    }
  }),
);

Deno.test(
  "a refused write says when to come back; a new generation is let through at once",
  withClock((clock) => {
    const guard = new WriteLoopGuard({ maxWrites: 2, windowMs: 10_000, backoffMs: 1_000 });
    guard.record(CHILD, 7);
    guard.record(CHILD, 7);
    expect(guard.check(CHILD, 7)).toEqual({
      allowed: false,
      retryInMs: 1_000,
      detected: true,
      writes: 2,
    });
    clock.tick(400);
    expect(guard.check(CHILD, 7)).toEqual({
      allowed: false,
      retryInMs: 600,
      detected: false,
      writes: 0,
    });
    expect(guard.check(CHILD, 8)).toEqual({ allowed: true });
    guard.forget("plugin", PARENT);
    expect(guard.check(CHILD, 7)).toEqual({ allowed: true });
  }),
);

Deno.test(
  "asking is not writing: attempts that failed or changed nothing (never recorded) are no loop",
  withClock((clock) => {
    const guard = new WriteLoopGuard({ maxWrites: 10, windowMs: 10_000 });
    // An API server restarting: a retry every 5 ms doubling, for 30 s, none of them a write.
    for (let delay = 5, t = 0; t < 30_000; t += delay, delay = Math.min(delay * 2, 1_000)) {
      expect(guard.check(STATUS, 3).allowed).toBe(true);
      clock.tick(delay);
    }
    // Then the catch-up: the writes that do go through, a handful, are let through.
    for (let i = 0; i < 9; i++) {
      expect(guard.check(STATUS, 3).allowed).toBe(true);
      guard.record(STATUS, 3);
      clock.tick(100);
    }
    // Only a tenth write that changed something, within the window, is one too many.
    guard.record(STATUS, 3);
    expect(guard.check(STATUS, 3)).toMatchObject({ allowed: false, detected: true });
  }),
);

Deno.test("each writer, parent and child is counted apart; forgetting a parent forgets its writes", () => {
  const guard = new WriteLoopGuard({ maxWrites: 1, windowMs: 10_000, backoffMs: 1_000 });
  guard.record(CHILD, 1);
  expect(guard.check(CHILD, 1).allowed).toBe(false);
  // Another child, the status, another writer, a namesake parent of another kind: not this loop.
  const other = refTo(CONFIG_MAP, { namespace: "ns", name: "other" });
  expect(guard.check({ ...CHILD, child: other }, 1).allowed).toBe(true);
  expect(guard.check(STATUS, 1).allowed).toBe(true);
  expect(guard.check({ ...CHILD, writer: "another" }, 1).allowed).toBe(true);
  expect(guard.check({ ...CHILD, parent: { ...PARENT, kind: "Q" } }, 1).allowed).toBe(true);
  guard.record(STATUS, 1);
  guard.forget("plugin", PARENT);
  expect(guard.check(CHILD, 1).allowed).toBe(true);
  expect(guard.check(STATUS, 1).allowed).toBe(true);
});

Deno.test(
  "what can no longer refuse a write is forgotten; a loop's pauses are remembered and still grow",
  withClock((clock) => {
    const guard = new WriteLoopGuard({ maxWrites: 5, windowMs: 10_000, backoffMs: 30_000 });
    // A loop on CHILD: 5 writes, then a 30 s pause.
    expect(hammer(guard, clock, 1_000)).toEqual({ writes: 5, detected: 1 });
    // 10,000 other children written once each, as a start over 10,000 parents does.
    for (let i = 0; i < 10_000; i++) {
      guard.record({ ...CHILD, child: refTo(CONFIG_MAP, { namespace: "ns", name: `c-${i}` }) }, 1);
    }
    expect(guard.size).toBe(10_001);
    clock.tick(10_000);
    // The next write after a quiet window sweeps: the loop and the new write stay.
    guard.record(STATUS, 1);
    expect(guard.size).toBe(2);
    // The loop comes back after its pause and is paused twice as long.
    clock.tick(20_000);
    expect(hammer(guard, clock, 1_000)).toEqual({ writes: 5, detected: 1 });
    const verdict = guard.check(CHILD, 1);
    expect(verdict.allowed).toBe(false);
    expect((verdict as { retryInMs: number }).retryInMs).toBeGreaterThan(50_000);
  }),
);
