/**
 * A leader frozen past its lease (SIGSTOP, as a VM pause or CPU starvation would) never writes
 * again once another instance has taken over, judged from the API server's audit log while the
 * objects it reconciles keep changing. The instances run as pods do, with pod-bound tokens, under
 * the leader fence the deploy installs (cli/manifests/leader_fence_policy.ts): a request the
 * process had handed to its HTTP client before it froze leaves as it wakes, and only the API server
 * can refuse it; every other write the operator must not even send. Each instance reports the
 * moment its own fence lets a write go, so the test tells the two apart: nothing may pass the fence
 * after the thaw, and whatever of the old leader's still arrives after the takeover must change
 * nothing.
 */
import { expect } from "expect";
import { leaderFencePolicy } from "../cli/manifests/leader_fence_policy.ts";
import { policyResource } from "../kube/empty_value_policy.ts";
import { type AuditEvent, WRITE_VERBS } from "../testing/audit_log.ts";
import { grantClusterAdmin } from "../testing/service_account_identity.ts";
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
/** The sample operator's Lease and ServiceAccount (tests/fixtures/sample_operator.ts). */
const LEASE_REF = { name: "sample-operator", namespace: "default" };
const ACCOUNT = { name: "sample-operator", namespace: "default" };

/** Refused by the API server's leader fence: it changed nothing. */
const refusedByFence = (e: AuditEvent) =>
  e.responseStatus?.code === 403 && /does not hold the Lease/.test(e.responseStatus.message ?? "");

/**
 * Refused as a conflict: the object changed since the request was made (the new leader wrote it),
 * and the API server checks a write's resourceVersion, and server-side apply its field owners,
 * before it runs validating admission, so the fence never saw it. It changed nothing either.
 */
const refusedAsConflict = (e: AuditEvent) => e.responseStatus?.code === 409;

/**
 * Cancelled by the waking process before the server answered (504: its abandoned deadline aborts
 * the request as it leaves). Under the fence it changed nothing either: the API server runs
 * validating admission before storage, so a cancelled request either stops before admission or
 * is refused by it; only its answer is lost.
 */
const cancelledOnArrival = (e: AuditEvent) => e.responseStatus?.code === 504;

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
  await grantClusterAdmin(admin, `system:serviceaccount:${ACCOUNT.namespace}:${ACCOUNT.name}`);
  for (const object of leaderFencePolicy({ serviceAccount: ACCOUNT, lease: LEASE_REF })) {
    await admin.apply(policyResource(object)!, object, { fieldManager: "test", force: true });
  }
  // Each as its own pod: the identity begins with the pod's name, as the Deployment's does.
  const instances = await Promise.all(["a", "b"].map(async (id) => {
    const pod = `sample-${id}`;
    const identity = await plane.serviceAccountIdentity(ACCOUNT.namespace, ACCOUNT.name, { pod });
    return OperatorProcess.start(
      identity.kubeconfigPath,
      `${pod}_${id}`,
      `${plane.dir}/operator-${id}.log`,
      { reportSends: true },
    );
  }));
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
        // On failure the test's own finally wakes every instance.
        await eventually(() => expect(standby.leading).toBe(true), { timeoutMs: FREEZE_MS });
        await sleep(Math.max(0, frozenAt + FREEZE_MS - Date.now()));
        // Whatever passes the leader's fence from here on was decided after it woke.
        const thawedAt = Date.now();
        leader.kill("SIGCONT");
        // Time for the old leader to do anything it might wrongly do after it wakes up.
        await eventually(() => expect(leader.leading).toBe(false), { timeoutMs: 10_000 });
        await sleep(8_000);

        const audit = await plane.auditEvents();
        const takeover = writesBy(audit, standby.userAgent).map(at).filter((t) => t >= frozenAt);
        expect(takeover.length).toBeGreaterThan(0);
        const firstByStandby = Math.min(...takeover);
        const stale = writesBy(audit, leader.userAgent).filter((e) => at(e) >= firstByStandby);
        const changedNothing = (e: AuditEvent) =>
          refusedByFence(e) || refusedAsConflict(e) || cancelledOnArrival(e);
        const passedBeforeFreeze = leader.sends.filter((t) => t < frozenAt).length;
        const arrivedBeforeFreeze = writesBy(audit, leader.userAgent)
          .filter((e) => at(e) < frozenAt && e.objectRef?.resource !== "leases").length;
        const passedAfterThaw = leader.sends.filter((t) => t >= thawedAt);
        // The new leader's first writes may reach an API server that has not yet seen the Lease
        // change (its parameter is a cache too): refused, and retried.
        const early = writesBy(audit, standby.userAgent)
          .filter((e) => at(e) >= frozenAt && refusedByFence(e)).length;
        console.error(
          `    round ${round}: standby's first write ${firstByStandby - frozenAt} ms after the ` +
            `freeze; ${stale.length} writes by the old leader after it: ` +
            `${stale.filter(refusedByFence).length} refused by the API server's leader fence, ` +
            `${stale.filter(refusedAsConflict).length} as conflicts, ` +
            `${stale.filter(cancelledOnArrival).length} cancelled on arrival; ` +
            `${early} of the new leader's refused by the fence; ${passedBeforeFreeze} writes ` +
            `passed the old leader's own fence before the freeze (${arrivedBeforeFreeze} arrived), ` +
            `${passedAfterThaw.length} after the thaw`,
        );
        // The report sees every write: each the API server had from the leader before the freeze
        // (but its Leases, which the fence does not cover) was seen passing the fence first.
        expect(arrivedBeforeFreeze).toBeGreaterThan(0);
        expect(passedBeforeFreeze).toBeGreaterThanOrEqual(arrivedBeforeFreeze);
        // The operator decided on no write after it woke: its own fence refused them all.
        expect(passedAfterThaw.map((t) => `passed the fence ${t - thawedAt} ms after the thaw`))
          .toEqual([]);
        // So what still arrived had been handed to the HTTP client before the freeze; the API
        // server must have refused it or seen it cancelled. A success means the fence let one
        // through.
        expect(
          stale.filter((e) => !changedNothing(e)).map((e) =>
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
