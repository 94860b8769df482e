/**
 * Leader election across real processes: one leader, hand-over within a retry period on SIGTERM,
 * takeover within the promised bound on SIGKILL (twenty times), no overlap.
 */
import { expect } from "expect";
import { CONFIG_MAP, NAMESPACE } from "../kube/kinds.ts";
import { eventually } from "../testing/eventually.ts";
import { kubeconfigYaml } from "../kube/kubeconfig_yaml.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { TcpProxy } from "../testing/tcp_proxy.ts";
import { CONFIG_SET, CONFIG_SET_CRD } from "./fixtures/config_set.ts";
import { OperatorProcess } from "./fixtures/operator_process.ts";

const LEASE_MS = 15_000;
const RETRY_MS = 2_000;
/**
 * The promise (README): after a crash another instance leads within the lease duration of the
 * crashed leader's last renewal, since standbys watch the lease; if the watch is down, within a
 * lease duration plus one jittered retry period (1.2 × retry) of the last poll.
 */
const takeoverBound = (lease: number, retry: number) => lease + 1.2 * retry;
/** Process start-up and scheduling on a shared 2-core machine. */
const SLACK_MS = 3_000;
/** Timings scaled down for the many-rounds test; the same code and the same bound formula. */
const FAST = { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 1_000 };
const FAST_ROUNDS = 20;

interface Interval {
  id: string;
  start: number;
  end: number;
}

function intervals(
  processes: OperatorProcess[],
  killedAt: Map<OperatorProcess, number>,
): Interval[] {
  return processes.flatMap((p) => {
    const out: Interval[] = [];
    let start: number | undefined;
    for (const e of p.events) {
      if (e.event === "leading") start = e.t;
      if (e.event === "stopped" && start !== undefined) {
        out.push({ id: p.id, start, end: e.t });
        start = undefined;
      }
    }
    if (start !== undefined) out.push({ id: p.id, start, end: killedAt.get(p) ?? Date.now() });
    return out;
  });
}

function expectNoOverlap(all: Interval[]): void {
  const sorted = [...all].sort((a, b) => a.start - b.start);
  for (let i = 1; i < sorted.length; i++) {
    expect({ next: sorted[i].id, startedAfterPreviousEnded: sorted[i].start >= sorted[i - 1].end })
      .toEqual({ next: sorted[i].id, startedAfterPreviousEnded: true });
  }
}

async function exactlyOneLeads(
  processes: OperatorProcess[],
  retryMs = RETRY_MS,
): Promise<OperatorProcess> {
  const leaders = await eventually(() => {
    expect(processes.filter((p) => p.exited).map((p) => p.id)).toEqual([]);
    const leaders = processes.filter((p) => p.leading);
    expect(leaders).toHaveLength(1);
    return leaders;
  }, { timeoutMs: 60_000 });
  // And it stays that way for a few retry periods.
  await new Promise((resolve) => setTimeout(resolve, 2 * retryMs));
  expect(processes.filter((p) => p.leading).map((p) => p.id)).toEqual([leaders[0].id]);
  return leaders[0];
}

await integrationTest("leader election between operator processes", {
  crds: [CONFIG_SET_CRD],
}, async (plane, step) => {
  const admin = plane.client();
  await admin.create(NAMESPACE, { metadata: { name: "le" } });
  const all: OperatorProcess[] = [];
  const killedAt = new Map<OperatorProcess, number>();
  const start = (id: string) => {
    const p = OperatorProcess.start(
      plane.adminKubeconfigPath,
      id,
      `${plane.dir}/operator-${id}.log`,
    );
    all.push(p);
    return p;
  };

  try {
    await step(
      "two instances: one leads and works; SIGTERM hands over within one retry period",
      async () => {
        const pair = [start("a"), start("b")];
        const leader = await exactlyOneLeads(pair);
        const other = pair.find((p) => p !== leader)!;
        await admin.create(CONFIG_SET, {
          metadata: { name: "one", namespace: "le" },
          spec: { entries: { k: "v" } },
        });
        await eventually(() => admin.get(CONFIG_MAP, "one-k", { namespace: "le" }));

        const sentAt = Date.now();
        leader.kill("SIGTERM");
        expect((await leader.status).code).toBe(0);
        expect(leader.events.map((e) => e.event)).toEqual([
          "started",
          "leading",
          "stopped",
          "exited",
        ]);
        await eventually(() => expect(other.leading).toBe(true), { timeoutMs: LEASE_MS * 2 });
        const takeover = other.lastLeadingAt! - sentAt;
        console.error(`    SIGTERM handover took ${takeover} ms (lease ${LEASE_MS} ms)`);
        // The old leader released the lease, and the standby saw that through its watch.
        expect(takeover).toBeLessThan(RETRY_MS);
        other.kill("SIGTERM");
        expect((await other.status).code).toBe(0);
      },
    );

    await step(
      "three instances: one leads; after SIGKILL another leads within lease + retry",
      async () => {
        const trio = [start("c"), start("d"), start("e")];
        const leader = await exactlyOneLeads(trio);
        const killed = Date.now();
        leader.kill("SIGKILL");
        killedAt.set(leader, killed);
        await leader.status;
        const rest = trio.filter((p) => p !== leader);
        const next = await exactlyOneLeads(rest);
        const takeover = next.lastLeadingAt! - killed;
        const bound = takeoverBound(LEASE_MS, RETRY_MS);
        console.error(`    SIGKILL takeover took ${takeover} ms (bound ${bound} ms)`);
        expect(takeover).toBeLessThanOrEqual(bound);
        // The new leader does the work.
        await admin.create(CONFIG_SET, {
          metadata: { name: "two", namespace: "le" },
          spec: { entries: { k: "v" } },
        });
        await eventually(() => admin.get(CONFIG_MAP, "two-k", { namespace: "le" }));
        for (const p of rest) p.kill("SIGTERM");
        for (const p of rest) expect((await p.status).code).toBe(0);
      },
    );

    await step(
      `${FAST_ROUNDS} SIGKILLs with ${
        FAST.leaseDurationMs / 1000
      } s leases: each takeover within the bound`,
      async () => {
        const bound = takeoverBound(FAST.leaseDurationMs, FAST.retryPeriodMs);
        const begin = (id: string) => {
          const p = OperatorProcess.start(
            plane.adminKubeconfigPath,
            id,
            `${plane.dir}/operator-${id}.log`,
            FAST,
          );
          all.push(p);
          return p;
        };
        const alive = [begin("k0"), begin("k1")];
        const takeovers: number[] = [];
        for (let round = 1; round <= FAST_ROUNDS; round++) {
          const leader = await exactlyOneLeads(alive, FAST.retryPeriodMs);
          const killed = Date.now();
          leader.kill("SIGKILL");
          killedAt.set(leader, killed);
          await leader.status;
          alive.splice(alive.indexOf(leader), 1);
          const next = await eventually(() => {
            const leaders = alive.filter((p) => p.leading);
            expect(leaders).toHaveLength(1);
            return leaders[0];
          }, { timeoutMs: bound + SLACK_MS * 2 });
          takeovers.push(next.lastLeadingAt! - killed);
          // A fresh standby for the next round, campaigning before the leader is killed.
          const fresh = begin(`k${round + 1}`);
          alive.push(fresh);
          await eventually(() => expect(fresh.events.map((e) => e.event)).toContain("started"));
          await new Promise((resolve) => setTimeout(resolve, FAST.retryPeriodMs));
        }
        console.error(
          `    takeovers (bound ${bound} ms): min ${Math.min(...takeovers)}, max ${
            Math.max(...takeovers)
          } ms`,
        );
        expect(takeovers.filter((t) => t > bound)).toEqual([]);
        for (const p of alive) p.kill("SIGTERM");
        for (const p of alive) expect((await p.status).code).toBe(0);
      },
    );

    await step(
      "a leader cut off from the API server stops all work, keeps running, and campaigns again",
      async () => {
        const proxy = new TcpProxy({
          hostname: "127.0.0.1",
          port: Number(new URL(plane.server).port),
        });
        try {
          const kubeconfig = `${plane.dir}/via-proxy.kubeconfig`;
          await Deno.writeTextFile(
            kubeconfig,
            kubeconfigYaml({ ...plane.adminConfig, server: `https://127.0.0.1:${proxy.port}` }),
          );
          const cutOff = OperatorProcess.start(kubeconfig, "f", `${plane.dir}/operator-f.log`);
          all.push(cutOff);
          await eventually(() => expect(cutOff.leading).toBe(true), { timeoutMs: LEASE_MS * 2 });
          const standby = start("g");
          await eventually(() => expect(standby.events.map((e) => e.event)).toContain("started"));
          const blockedAt = Date.now();
          proxy.block();
          // Renewal fails for the renew deadline (10 s): the leader stops its reconcilers...
          await eventually(() => expect(cutOff.leading).toBe(false), { timeoutMs: LEASE_MS * 2 });
          // ...and only after the lease expires does the other instance start.
          await eventually(() => expect(standby.leading).toBe(true), { timeoutMs: LEASE_MS * 3 });
          const stoppedAt = cutOff.events.findLast((e) => e.event === "stopped")!.t;
          console.error(
            `    cut-off leader stopped after ${stoppedAt - blockedAt} ms; standby led after ${
              standby.lastLeadingAt! - blockedAt
            } ms`,
          );
          expect(standby.lastLeadingAt!).toBeGreaterThanOrEqual(stoppedAt);
          proxy.unblock();
          // The old leader did not exit; it campaigns again and takes over when the standby leaves.
          standby.kill("SIGTERM");
          expect((await standby.status).code).toBe(0);
          await eventually(() => expect(cutOff.leading).toBe(true), { timeoutMs: LEASE_MS * 2 });
          expect(cutOff.events.filter((e) => e.event === "started")).toHaveLength(1);
          cutOff.kill("SIGTERM");
          expect((await cutOff.status).code).toBe(0);
        } finally {
          await proxy.close();
        }
      },
    );

    await step("recorded leadership intervals never overlap", () => {
      const recorded = intervals(all, killedAt);
      expect(recorded.length).toBeGreaterThanOrEqual(6 + FAST_ROUNDS);
      expectNoOverlap(recorded);
    });
  } finally {
    for (const p of all) p.kill("SIGKILL");
    await Promise.all(all.map((p) => p.status));
  }
});
