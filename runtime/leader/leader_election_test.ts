import * as FakeTimers from "@sinonjs/fake-timers";
import { expect } from "expect";
import type { KubeClient } from "../../kube/client.ts";
import { ApiError } from "../../kube/errors.ts";
import { NotLeaderError } from "../../kube/write_fence.ts";
import { type Clock, Instant } from "../../util/clock.ts";
import { sleep } from "../../util/sleep.ts";
import { StartupError } from "../../util/startup_error.ts";
import { log } from "../observe/mod.ts";
import { type LeaderCallbacks, LeaderElector, writeBudgetMs } from "./leader_election.ts";
import { defaultIdentity } from "./leader_identity.ts";
import { type Lease, leaseExpiresInMs, type LeaseSpec } from "./lease_view.ts";

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

// The elector itself, on fake timers and a clock the test moves, over our client's get, create
// and update of one Lease (a record with a compare-and-swap on its resourceVersion, failed when
// the test says): when it takes, keeps, loses and gives back the lease. That the API server keeps
// two electors apart is the integration suite's (tests/leader_election_test.ts).

type StoredLease = { spec?: LeaseSpec; metadata: { resourceVersion: string; name: string } };

/** Our client's reads and writes of one Lease, recorded. */
function leaseClient() {
  let lease: StoredLease | undefined;
  let version = 0;
  let failing: Error | undefined;
  const calls: string[] = [];
  const conflict = () => new ApiError({ code: 409, reason: "Conflict", message: "changed" });
  const answer = <T>(verb: string, write: () => T): Promise<T> => {
    calls.push(verb);
    return Promise.resolve().then(() => {
      if (failing) throw failing;
      return structuredClone(write());
    });
  };
  const store = (object: Lease) =>
    lease = {
      ...object,
      metadata: { ...object.metadata, name: "lease", resourceVersion: String(++version) },
    } as StoredLease;
  const client = {
    get: () =>
      answer("get", () => {
        if (lease) return lease;
        throw new ApiError({ code: 404, reason: "NotFound", message: "not found", details: {} });
      }),
    create: (_: unknown, object: Lease) =>
      answer("create", () => {
        if (lease) throw conflict();
        return store(object);
      }),
    update: (_: unknown, object: Lease) =>
      answer("update", () => {
        if (object.metadata?.resourceVersion !== lease?.metadata.resourceVersion) throw conflict();
        return store(object);
      }),
  } as unknown as KubeClient;
  return {
    client,
    calls,
    get spec(): LeaseSpec | undefined {
      return lease?.spec;
    },
    /** Someone else writes the lease. */
    write(spec: LeaseSpec) {
      store({ metadata: lease?.metadata ?? {}, spec });
    },
    /** Every request fails with `error` from now on (undefined: none does). */
    fail(error: Error | undefined) {
      failing = error;
    },
  };
}

/** An elector for "me" on fake timers; `log` says what its work was told. */
function electorOn() {
  const timers = FakeTimers.install({ toFake: ["setTimeout", "clearTimeout"] });
  let wallOffset = 0;
  const clock: Clock = { monotonicMs: () => timers.now, wallMs: () => timers.now + wallOffset };
  const fake = leaseClient();
  const elector = new LeaderElector(fake.client, {
    namespace: "ns",
    name: "lease",
    identity: "me",
    log: log("leader-test"),
    clock,
    watch: false,
  });
  const events: string[] = [];
  let drainMs = 0;
  const callbacks: LeaderCallbacks = {
    onStartedLeading: () => events.push("started"),
    onStoppedLeading: async (reason) => {
      events.push(`stopped ${reason} (leader while draining: ${elector.isLeader})`);
      await sleep(drainMs);
    },
  };
  const stop = new AbortController();
  const running = elector.run(stop.signal, callbacks).catch((error) => error);
  return {
    timers,
    fake,
    elector,
    events,
    running,
    tick: (ms: number) => timers.tickAsync(ms),
    jumpWall: (ms: number) => wallOffset += ms,
    drainFor: (ms: number) => drainMs = ms,
    async stop() {
      stop.abort();
      await timers.runAllAsync();
      return await running;
    },
    uninstall: () => timers.uninstall(),
  };
}

const OTHERS = { holderIdentity: "other", leaseDurationSeconds: 15, leaseTransitions: 0 };

Deno.test("elector: a free lease is taken, renewed every retry period, and released after the work drained", async () => {
  const e = electorOn();
  try {
    await e.tick(0);
    expect(e.events).toEqual(["started"]);
    expect(e.fake.calls).toEqual(["get", "create"]);
    expect(e.fake.spec).toMatchObject({ holderIdentity: "me", leaseDurationSeconds: 15 });
    expect(e.elector.fence()).toBe(12_500);
    // A renewal writes the lease it last wrote, without reading it first.
    await e.tick(2_000);
    expect(e.fake.calls).toEqual(["get", "create", "update"]);
    // Shutting down: the lease is renewed while the work drains, then given back.
    e.drainFor(3_000);
    const ended = e.stop();
    await ended;
    expect(e.events).toEqual(["started", "stopped shutdown (leader while draining: true)"]);
    expect(e.fake.calls).toEqual(["get", "create", "update", "update", "get", "update"]);
    expect(e.fake.spec?.holderIdentity).toBeUndefined();
    expect(e.fake.spec?.leaseDurationSeconds).toBe(1);
    expect(e.elector.isLeader).toBe(false);
  } finally {
    e.uninstall();
  }
});

Deno.test("elector: another's lease is taken once unchanged for its duration on the monotonic clock, whatever the wall clock does", async () => {
  const e = electorOn();
  try {
    e.fake.write(OTHERS);
    await e.tick(14_999);
    e.jumpWall(HOUR);
    await e.tick(0);
    expect(e.events).toEqual([]);
    expect(e.fake.calls.filter((c) => c !== "get")).toEqual([]);
    expect(e.fake.calls.length).toBeGreaterThan(5);
    expect(e.elector.holder()).toBe("other");
    expect(() => e.elector.fence()).toThrow(NotLeaderError);
    await e.tick(1);
    expect(e.events).toEqual(["started"]);
    expect(e.fake.spec).toMatchObject({ holderIdentity: "me", leaseTransitions: 1 });
    await e.stop();
  } finally {
    e.uninstall();
  }
});

Deno.test("elector: a holder that renews meanwhile keeps its lease: the count starts over", async () => {
  const e = electorOn();
  try {
    e.fake.write({ ...OTHERS, renewTime: "first" });
    await e.tick(10_000);
    e.fake.write({ ...OTHERS, renewTime: "second" });
    // Seen at the next look (within 2.4 s): not taken 15 s after the first record.
    await e.tick(6_000);
    expect(e.events).toEqual([]);
    await e.tick(14_000);
    expect(e.events).toEqual(["started"]);
    await e.stop();
  } finally {
    e.uninstall();
  }
});

Deno.test("elector: renewals refused past the renew deadline shut the fence and stop the work; it campaigns again", async () => {
  const e = electorOn();
  try {
    await e.tick(0);
    // Refused from now on (RBAC mid-change): after the first read, retried, not fatal.
    e.fake.fail(new ApiError({ code: 403, reason: "Forbidden", message: "no" }));
    await e.tick(9_999);
    expect(e.elector.fence()).toBe(2_501);
    expect(e.events).toEqual(["started"]);
    await e.tick(1);
    expect(() => e.elector.fence()).toThrow(NotLeaderError);
    expect(e.elector.isLeader).toBe(false);
    expect(e.events).toEqual(["started", "stopped lost (leader while draining: false)"]);
    e.fake.fail(undefined);
    await e.tick(2_400);
    expect(e.events.at(-1)).toBe("started");
    expect(e.fake.spec?.leaseTransitions).toBe(0);
    await e.stop();
  } finally {
    e.uninstall();
  }
});

Deno.test("elector: a leader frozen past its renew deadline leads no more when it resumes, before any timer runs", async () => {
  const e = electorOn();
  try {
    await e.tick(0);
    // Both clocks move on 11 s while no timer runs (SIGSTOP, a paused VM).
    e.timers.setSystemTime(e.timers.now + 11_000);
    expect(e.elector.isLeader).toBe(false);
    expect(() => e.elector.fence()).toThrow(NotLeaderError);
    // The refused write woke the loop: the work is told at once, and the lease, still its own
    // (nobody else could take it), taken again.
    await e.tick(0);
    expect(e.events).toEqual([
      "started",
      "stopped lost (leader while draining: false)",
      "started",
    ]);
    await e.stop();
  } finally {
    e.uninstall();
  }
});

Deno.test("elector: another holder seen while leading ends leadership at once", async () => {
  const e = electorOn();
  try {
    await e.tick(0);
    e.fake.write(OTHERS);
    // The renewal's write is refused (the lease changed); a read shows whose it is now.
    await e.tick(2_000);
    expect(e.fake.calls.slice(-2)).toEqual(["update", "get"]);
    expect(e.events).toEqual(["started", "stopped lost (leader while draining: false)"]);
    expect(e.elector.holder()).toBe("other");
    await e.stop();
  } finally {
    e.uninstall();
  }
});

Deno.test("elector: want(false) drains and gives the lease back, then stays out; want(true) takes it again", async () => {
  const e = electorOn();
  try {
    await e.tick(0);
    e.elector.want(false);
    await e.tick(0);
    expect(e.events).toEqual(["started", "stopped handover (leader while draining: true)"]);
    expect(e.fake.spec?.holderIdentity).toBeUndefined();
    const calls = e.fake.calls.length;
    await e.tick(60_000);
    expect(e.fake.calls.length).toBe(calls);
    e.elector.want(true);
    await e.tick(0);
    expect(e.events.at(-1)).toBe("started");
    expect(e.fake.spec?.holderIdentity).toBe("me");
    await e.stop();
  } finally {
    e.uninstall();
  }
});

Deno.test("elector: refused at its first look at the lease, it stops with what to grant", async () => {
  const e = electorOn();
  try {
    e.fake.fail(new ApiError({ code: 403, reason: "Forbidden", message: "leases is forbidden" }));
    await e.tick(0);
    const error = await e.running;
    expect(error).toBeInstanceOf(StartupError);
    expect(error.message).toContain("leader election needs the Lease ns/lease");
    expect(e.events).toEqual([]);
  } finally {
    e.uninstall();
  }
});

Deno.test("elector: timings that leave no room between renewing and losing are refused", () => {
  const client = leaseClient().client;
  const options = { namespace: "ns", name: "lease", identity: "me", log: log("leader-test") };
  expect(() => new LeaderElector(client, { ...options, renewDeadlineMs: 15_000 })).toThrow(
    RangeError,
  );
  expect(() => new LeaderElector(client, { ...options, retryPeriodMs: 9_000 })).toThrow(
    /lease duration \(15000 ms\) > renew deadline \(10000 ms\) > 1\.2 × retry period \(9000 ms\)/,
  );
});
