import { expect } from "expect";
import { type Clock, Instant } from "../../util/clock.ts";
import { writeBudgetMs } from "./leader_election.ts";
import { defaultIdentity } from "./leader_identity.ts";
import { leaseExpiresInMs } from "./lease_view.ts";

/** Two clocks the test moves apart: `run` moves both, `jump` only the wall clock. */
function clocks() {
  let monotonic = 50_000;
  let wall = Date.UTC(2026, 0, 1);
  const clock: Clock = { monotonicMs: () => monotonic, wallMs: () => wall };
  return {
    clock,
    run(ms: number) {
      monotonic += ms;
      wall += ms;
    },
    jump(ms: number) {
      wall += ms;
    },
    /** A suspended machine: the wall clock counts on, the monotonic one stands still. */
    suspend(ms: number) {
      wall += ms;
    },
  };
}

const TIMING = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000 };
const HOUR = 3600_000;

Deno.test("a standby counts a lease out on its monotonic clock: wall jumps change nothing", () => {
  for (const jump of [HOUR, -60_000, 24 * HOUR, -HOUR]) {
    const t = clocks();
    const changedAt = t.clock.monotonicMs();
    t.run(5_000);
    t.jump(jump);
    expect(leaseExpiresInMs(changedAt, 15_000, t.clock)).toBe(10_000);
    t.run(9_999);
    expect(leaseExpiresInMs(changedAt, 15_000, t.clock)).toBe(1);
    t.run(1);
    expect(leaseExpiresInMs(changedAt, 15_000, t.clock)).toBe(0);
  }
});

Deno.test("a standby whose machine was suspended waits longer, never less", () => {
  const t = clocks();
  const changedAt = t.clock.monotonicMs();
  t.suspend(60_000);
  expect(leaseExpiresInMs(changedAt, 15_000, t.clock)).toBe(15_000);
});

Deno.test("the leader's fence: open for the renew deadline, then shut", () => {
  const t = clocks();
  const renewed = Instant.now(t.clock);
  // A write sent at once may take the deadline plus half the margin to the lease duration.
  expect(writeBudgetMs(renewed, TIMING)).toBe(12_500);
  t.run(9_000);
  expect(writeBudgetMs(renewed, TIMING)).toBe(3_500);
  t.run(1_000);
  expect(writeBudgetMs(renewed, TIMING)).toBeUndefined();
  expect(writeBudgetMs(undefined, TIMING)).toBeUndefined();
});

Deno.test("the leader's fence shuts early on a forward wall jump, and on a suspension", () => {
  const forward = clocks();
  const renewed = Instant.now(forward.clock);
  forward.run(1_000);
  forward.jump(HOUR);
  expect(writeBudgetMs(renewed, TIMING)).toBeUndefined();

  const suspended = clocks();
  const before = Instant.now(suspended.clock);
  suspended.suspend(20_000);
  expect(writeBudgetMs(before, TIMING)).toBeUndefined();
});

Deno.test("the leader's fence is not widened by a wall clock stepped back", () => {
  const t = clocks();
  const renewed = Instant.now(t.clock);
  t.jump(-60_000);
  t.run(4_000);
  expect(writeBudgetMs(renewed, TIMING)).toBe(8_500);
  t.run(6_000);
  expect(writeBudgetMs(renewed, TIMING)).toBeUndefined();
});

Deno.test("whatever the wall clocks do, the leader's writes end before a standby may take over", () => {
  // Real time passes in steps; either wall clock jumps either way now and then, and the leader's
  // machine is suspended now and then (its monotonic clock stands still, real time goes on). The
  // standby, on its own monotonic clock, received the renewal no earlier than it was sent.
  for (let trial = 0; trial < 1_000; trial++) {
    const leader = clocks();
    const standby = clocks();
    const renewed = Instant.now(leader.clock);
    const seenAt = standby.clock.monotonicMs();
    let real = 0;
    let lastWriteEnds = -Infinity;
    let takeover = Infinity;
    while (takeover === Infinity) {
      const step = Math.random() * 500;
      const roll = Math.random();
      if (roll < 0.05) leader.jump((Math.random() - 0.5) * 4 * HOUR);
      if (roll > 0.95) standby.jump((Math.random() - 0.5) * 4 * HOUR);
      if (roll > 0.97) leader.suspend(step);
      else leader.run(step);
      standby.run(step);
      real += step;
      const budget = writeBudgetMs(renewed, TIMING);
      if (budget !== undefined) lastWriteEnds = Math.max(lastWriteEnds, real + budget);
      if (leaseExpiresInMs(seenAt, TIMING.leaseDurationMs, standby.clock) <= 0) takeover = real;
    }
    expect(lastWriteEnds).toBeLessThan(takeover);
  }
});

Deno.test("the identity begins with the pod's name when POD_NAME is set, else the hostname", () => {
  const before = Deno.env.get("POD_NAME");
  try {
    // The API server's leader fence compares this prefix with the pod its token names.
    Deno.env.set("POD_NAME", "ptemplate-operator-5d4c8b7f9-x2k7q");
    expect(defaultIdentity()).toMatch(/^ptemplate-operator-5d4c8b7f9-x2k7q_[0-9a-f]{8}$/);
    Deno.env.delete("POD_NAME");
    expect(defaultIdentity().startsWith(`${Deno.hostname()}_`)).toBe(true);
    expect(defaultIdentity()).not.toBe(defaultIdentity());
  } finally {
    if (before === undefined) Deno.env.delete("POD_NAME");
    else Deno.env.set("POD_NAME", before);
  }
});
