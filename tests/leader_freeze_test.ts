/**
 * A leader frozen past its lease (SIGSTOP, as a VM pause or CPU starvation would) never writes
 * again once another instance has taken over, judged from the API server's audit log while the
 * objects it reconciles keep changing.
 */
import { expect } from "expect";
import { type AuditEvent, WRITE_VERBS } from "../testing/audit_log.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { sleep } from "../util/sleep.ts";
import { CONFIG_SET_CRD } from "./fixtures/config_set.ts";
import { churnConfigSets, createConfigSets } from "./fixtures/config_set_churn.ts";
import { OperatorProcess } from "./fixtures/operator_process.ts";

const NS = "freeze";
const SETS = 8;
/** Longer than the default lease (15 s), so the standby surely takes over meanwhile. */
const FREEZE_MS = 20_000;
const ROUNDS = 3;

const at = (event: AuditEvent) => Date.parse(event.requestReceivedTimestamp);

/** Writes that changed something, or tried to: a lease update refused as stale changed nothing. */
function writesBy(events: AuditEvent[], userAgent: string): AuditEvent[] {
  return events.filter((e) =>
    e.userAgent === userAgent && WRITE_VERBS.has(e.verb) &&
    !(e.objectRef?.resource === "leases" && (e.responseStatus?.code ?? 0) >= 400)
  );
}

await integrationTest("a frozen leader writes nothing after another took over", {
  crds: [CONFIG_SET_CRD],
  audit: true,
}, async (plane, step) => {
  const admin = plane.client();
  await createConfigSets(admin, NS, SETS);
  const instances = ["a", "b"].map((id) =>
    OperatorProcess.start(plane.adminKubeconfigPath, id, `${plane.dir}/operator-${id}.log`)
  );
  const stopChurn = churnConfigSets(admin, NS, SETS);

  try {
    for (let round = 1; round <= ROUNDS; round++) {
      await step(`round ${round}: freeze the leader for ${FREEZE_MS / 1000} s`, async () => {
        const leader = await eventually(() => {
          expect(instances.filter((p) => p.exited).map((p) => p.id)).toEqual([]);
          const leaders = instances.filter((p) => p.leading);
          expect(leaders).toHaveLength(1);
          return leaders[0];
        }, { timeoutMs: 60_000 });
        const standby = instances.find((p) => p !== leader)!;
        // The leader has been writing: the churn is being reconciled.
        await eventually(async () => {
          const recent = writesBy(await plane.auditEvents(), leader.userAgent)
            .filter((e) => Date.now() - at(e) < 2_000);
          expect(recent.length).toBeGreaterThan(0);
        });
        const frozenAt = Date.now();
        leader.kill("SIGSTOP");
        try {
          await eventually(() => expect(standby.leading).toBe(true), { timeoutMs: FREEZE_MS });
        } finally {
          await sleep(Math.max(0, frozenAt + FREEZE_MS - Date.now()));
          leader.kill("SIGCONT");
        }
        // Time for the old leader to do anything it might wrongly do after it wakes up.
        await eventually(() => expect(leader.leading).toBe(false), { timeoutMs: 10_000 });
        await sleep(8_000);

        const audit = await plane.auditEvents();
        const takeover = writesBy(audit, standby.userAgent).map(at).filter((t) => t >= frozenAt);
        expect(takeover.length).toBeGreaterThan(0);
        const firstByStandby = Math.min(...takeover);
        const stale = writesBy(audit, leader.userAgent).filter((e) => at(e) >= firstByStandby);
        console.error(
          `    round ${round}: standby's first write ${firstByStandby - frozenAt} ms after the ` +
            `freeze; ${stale.length} writes by the old leader after it`,
        );
        // Each with the server's answer: a refused one (409) changed nothing, yet it still left a
        // process that had lost the lease, which is what this test forbids.
        expect(
          stale.map((e) =>
            `${e.verb} ${e.requestURI} ${e.requestReceivedTimestamp} ${e.responseStatus?.code}`
          ),
        ).toEqual([]);
      });
    }
  } finally {
    await stopChurn();
    for (const p of instances) p.kill("SIGCONT");
    for (const p of instances) p.kill("SIGTERM");
    await Promise.all(instances.map((p) => p.status));
  }
});
