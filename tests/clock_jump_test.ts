/**
 * Leader election when wall clocks jump: two real operator processes whose wall clocks a test
 * steps (+1 h, −1 min; libfaketime, the monotonic clock untouched), on the leader and on the
 * standby, idle and under load. Judged from the API server's audit log: every write by either
 * process is made while the lease is that process's, so there are never two writers; and the
 * healthy leader keeps its lease through all of it.
 */
import { expect } from "expect";
import { LEASE } from "../kube/kinds.ts";
import { inCi } from "../testing/ci.ts";
import { type AuditEvent, WRITE_VERBS } from "../testing/audit_log.ts";
import { eventually } from "../testing/eventually.ts";
import { FakeWallClock, findLibfaketime } from "../testing/fake_wall_clock.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { sleep } from "../util/sleep.ts";
import { CONFIG_SET_CRD } from "./fixtures/config_set.ts";
import { churnConfigSets, createConfigSets } from "./fixtures/config_set_churn.ts";
import { OperatorProcess } from "./fixtures/operator_process.ts";

const NS = "clocks";
const SETS = 8;
/** Shorter than the defaults, the same code: each jump is watched for longer than a lease. */
const TIMING = { leaseDurationMs: 6_000, renewDeadlineMs: 4_000, retryPeriodMs: 1_000 };
/** A standby misled by its wall clock would have taken the lease well within this. */
const WATCH_MS = 10_000;
const HOUR_S = 3600;
const JUMPS: { who: "leader" | "standby"; seconds: number; label: string }[] = [
  { who: "standby", seconds: HOUR_S, label: "+1 h on the standby" },
  { who: "standby", seconds: -60, label: "−1 min on the standby" },
  { who: "leader", seconds: HOUR_S, label: "+1 h on the leader" },
  { who: "leader", seconds: -60, label: "−1 min on the leader" },
];

const library = findLibfaketime();
if (!library) {
  const why = "libfaketime is not installed (apt-get install -y faketime; .ci/run does it)";
  if (inCi()) throw new Error(`clock_jump_test needs ${why}`);
  console.error(`\n!!! SKIPPING the clock-jump test (not under CI): ${why}\n`);
}

/** When an audited request took effect: its answer for lease writes, its arrival for others. */
const answeredAt = (e: AuditEvent) => Date.parse(e.stageTimestamp ?? e.requestReceivedTimestamp);
const receivedAt = (e: AuditEvent) => Date.parse(e.requestReceivedTimestamp);

if (library) {
  await integrationTest("wall clocks that jump never make two writers", {
    crds: [CONFIG_SET_CRD],
    audit: true,
  }, async (plane, step) => {
    const admin = plane.client();
    await createConfigSets(admin, NS, SETS);
    const clocks = new Map<string, FakeWallClock>();
    const instances: OperatorProcess[] = [];
    for (const id of ["a", "b"]) {
      const clock = await FakeWallClock.create(library, plane.dir, id);
      clocks.set(id, clock);
      instances.push(
        OperatorProcess.start(
          plane.adminKubeconfigPath,
          id,
          `${plane.dir}/operator-${id}.log`,
          TIMING,
          clock.env,
        ),
      );
    }
    const oneLeader = () =>
      eventually(() => {
        expect(instances.filter((p) => p.exited).map((p) => p.id)).toEqual([]);
        const leaders = instances.filter((p) => p.leading);
        expect(leaders.map((p) => p.id)).toHaveLength(1);
        return leaders[0];
      }, { timeoutMs: 60_000 });
    const holder = async () =>
      (await admin.get(LEASE, "sample-operator", { namespace: "default" })).spec
        ?.holderIdentity;

    /** Jumps one clock, watches for longer than a lease, and checks the leader kept its lease. */
    const jump = async (who: "leader" | "standby", seconds: number, busy: boolean) => {
      const leader = await oneLeader();
      const standby = instances.find((p) => p !== leader)!;
      const before = await holder();
      expect(before).toBe(leader.id);
      // Counted, not timed: the processes' own timestamps are on their faked clocks.
      const standbyLed = standby.events.filter((e) => e.event === "leading").length;
      const jumpedAt = Date.now();
      await clocks.get((who === "leader" ? leader : standby).id)!.jump(seconds);
      await sleep(WATCH_MS);
      expect((await oneLeader()).id).toBe(leader.id);
      expect(await holder()).toBe(leader.id);
      expect(standby.events.filter((e) => e.event === "leading")).toHaveLength(standbyLed);
      if (busy) {
        // It kept working: its writes kept coming during the watch.
        const audit = await plane.auditEvents();
        const recent = audit.filter((e) =>
          e.userAgent === leader.userAgent && WRITE_VERBS.has(e.verb) &&
          e.objectRef?.resource !== "leases" && receivedAt(e) >= jumpedAt + WATCH_MS / 2
        );
        expect(recent.length).toBeGreaterThan(0);
      }
    };

    try {
      await step("one of two leads", async () => {
        await oneLeader();
      });
      for (const { who, seconds, label } of JUMPS) {
        await step(`idle: ${label}`, () => jump(who, seconds, false));
      }
      const stopChurn = churnConfigSets(admin, NS, SETS);
      try {
        for (const { who, seconds, label } of JUMPS) {
          await step(`under load: ${label}`, () => jump(who, seconds, true));
        }
      } finally {
        await stopChurn();
      }

      await step("from the audit log: every write was made by the lease's holder", async () => {
        const audit = await plane.auditEvents();
        const agents = new Set(instances.map((p) => p.userAgent));
        const ours = audit.filter((e) => agents.has(e.userAgent ?? "") && WRITE_VERBS.has(e.verb));
        const isLease = (e: AuditEvent) =>
          e.objectRef?.resource === "leases" && e.objectRef.name === "sample-operator";
        // Who holds the lease, and since when: each successful lease write is its writer's claim.
        const claims = ours
          .filter((e) => isLease(e) && (e.responseStatus?.code ?? 0) < 300)
          .map((e) => ({ who: e.userAgent!, at: answeredAt(e) }))
          .sort((x, y) => x.at - y.at);
        const writes = ours.filter((e) => !isLease(e));
        expect(writes.length).toBeGreaterThan(100);
        const wrong = writes.filter((e) => {
          const claim = claims.findLast((c) => c.at <= receivedAt(e));
          return claim?.who !== e.userAgent;
        });
        const holders = new Set(claims.map((c) => c.who));
        console.error(
          `    ${writes.length} writes, lease written by ${[...holders].join(" and ")}; ` +
            `${wrong.length} by a process that did not hold the lease`,
        );
        expect(
          wrong.map((e) =>
            `${e.userAgent} ${e.verb} ${e.requestURI} ${e.requestReceivedTimestamp}`
          ),
        )
          .toEqual([]);
        // And the healthy leader kept it: nobody else ever wrote the lease after the first claim.
        expect(holders.size).toBe(1);
      });
    } finally {
      for (const p of instances) p.kill("SIGTERM");
      await Promise.all(instances.map((p) => p.status));
    }
  });
} else {
  Deno.test({ name: "wall clocks that jump never make two writers", ignore: true, fn() {} });
}
