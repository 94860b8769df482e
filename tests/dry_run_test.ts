/**
 * `run --dry-run` rehearses against the live cluster, beside the real operator, and changes
 * nothing: against the operator as it runs it finds nothing to change; with a plugin's next
 * version it names every DaemonSet that would change, and where. The API server's audit log shows
 * that it stored nothing (its child writes went as server-side dry runs) and took no Lease.
 */
import { expect } from "expect";
import { KMM_MODULE_CRD_FILE, MODULE } from "../crds/kmm_module.ts";
import { PTEMPLATE, PTEMPLATE_CRD } from "../crds/ptemplate.ts";
import { DAEMON_SET, NAMESPACE } from "../kube/kinds.ts";
import type { Unstructured } from "../kube/object.ts";
import type { AuditEvent } from "../testing/audit_log.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { OperatorRun, spawnOperator } from "./fixtures/operator_command.ts";

const NS = "rehearsed";
const WRITES = new Set(["create", "update", "patch", "delete", "deletecollection"]);

await integrationTest("dry run: a rehearsal beside the real operator that changes nothing", {
  audit: true,
  crds: [PTEMPLATE_CRD, KMM_MODULE_CRD_FILE],
}, async (plane, step) => {
  const admin = plane.client();
  await admin.create(NAMESPACE, { metadata: { name: NS } });
  for (const name of ["a", "b", "c"]) {
    await admin.create(PTEMPLATE, {
      metadata: { name, namespace: NS },
      spec: { selector: { role: "worker" } },
    } as Unstructured);
  }
  // The real operator, leading, as it runs in a cluster.
  const operator = OperatorRun.start([
    `--kubeconfig=${plane.adminKubeconfigPath}`,
    "--metrics-bind-address=127.0.0.1:0",
    "--health-probe-bind-address=127.0.0.1:0",
    "--leader-elect",
    "--leader-election-namespace=default",
  ]);
  const rehearse = async (...args: string[]) => {
    const run = (output: string) =>
      spawnOperator([
        `--kubeconfig=${plane.adminKubeconfigPath}`,
        "--metrics-bind-address=127.0.0.1:0",
        "--health-probe-bind-address=127.0.0.1:0",
        "--log-format=json",
        "--dry-run",
        `--dry-run-output=${output}`,
        ...args,
      ], { env: { POD_NAME: "rehearsal" } }).output();
    const decode = (b: Uint8Array) => new TextDecoder().decode(b);
    const text = await run("text");
    const json = await run("json");
    if (json.code !== 0) throw new Error(`dry run failed: ${decode(json.stderr).slice(-3000)}`);
    return {
      code: text.code,
      stdout: decode(text.stdout),
      report: JSON.parse(decode(json.stdout)),
    };
  };
  const writesOf = (since: string) =>
    plane.auditEvents().then((events) =>
      events.filter((e: AuditEvent) =>
        e.requestReceivedTimestamp >= since && WRITES.has(e.verb) &&
        e.objectRef?.resource !== "leases"
      )
    );
  try {
    // Converged, however busy the machine: both children made and the status written, so that
    // what the rehearsal finds to change is the rehearsal's, not the real operator's lag.
    await eventually(async () => {
      for (const name of ["a", "b", "c"]) {
        await admin.get(DAEMON_SET, `${name}-consumer`, { namespace: NS });
        await admin.get(MODULE, name, { namespace: NS });
        const pt = await admin.get(PTEMPLATE, name, { namespace: NS });
        if (pt.status?.observedGeneration !== pt.metadata?.generation) {
          throw new Error(`Ptemplate ${name}'s status is not written yet`);
        }
      }
    }, { timeoutMs: 120_000 });

    await step("against the operator as it runs: nothing to change, nothing written", async () => {
      const since = new Date().toISOString();
      const run = await rehearse();
      expect({ code: run.code, stdout: run.stdout }).toMatchObject({ code: 0 });
      expect(run.stdout).toContain("dry run: would change 0 of 3 Ptemplate(s)");
      expect(run.report.objects).toEqual([]);
      // Its requests say so in their user agent: none of them a write, dry or not.
      const writes = (await writesOf(since)).filter((e) => e.userAgent?.endsWith("(dry run)"));
      expect(writes).toEqual([]);
    });

    await step("with a plugin's next version: each DaemonSet would change, and where", async () => {
      const since = new Date().toISOString();
      const next = new URL("./fixtures/consumer_daemonset_next.ts", import.meta.url).pathname;
      const run = await rehearse(
        `--plugin=${next}`,
        "--plugins=+kmm-module,+status-aggregator",
      );
      expect({ code: run.code, stdout: run.stdout }).toMatchObject({ code: 0 });
      expect(run.stdout).toContain("dry run: would change 3 of 3 Ptemplate(s): 3 update DaemonSet");
      expect(run.report.objects.map((o: { object: string }) => o.object).sort()).toEqual([
        `Ptemplate ${NS}/a`,
        `Ptemplate ${NS}/b`,
        `Ptemplate ${NS}/c`,
      ]);
      expect(run.report.objects[0].changes).toEqual([{
        verb: "update",
        what: expect.stringMatching(/^DaemonSet [abc]-consumer$/),
        detail: expect.stringContaining("spec.template.metadata.annotations"),
        controller: "consumer-daemonset",
      }]);
      // What it sent went as server-side dry runs, each checked by the API server; nothing else.
      const writes = (await writesOf(since)).filter((e) => e.userAgent?.endsWith("(dry run)"));
      expect(writes.length).toBeGreaterThanOrEqual(3);
      for (const write of writes) {
        expect({ uri: write.requestURI, code: write.responseStatus?.code }).toEqual({
          uri: expect.stringContaining("dryRun=All"),
          code: 200,
        });
        expect(write.objectRef?.resource).toBe("daemonsets");
      }
      // The DaemonSets are as the real operator left them.
      const ds = await admin.get(DAEMON_SET, "a-consumer", { namespace: NS });
      expect(ds.spec?.template.metadata?.annotations?.["example.com/release"]).toBeUndefined();
    });

    await step("it took no Lease; the real operator kept its own", async () => {
      const leaseWrites = (await plane.auditEvents()).filter((e: AuditEvent) =>
        e.objectRef?.resource === "leases" && WRITES.has(e.verb)
      );
      expect(leaseWrites.filter((e) => e.userAgent?.endsWith("(dry run)"))).toEqual([]);
      expect(leaseWrites.length).toBeGreaterThan(0);
      const leases = await admin.request<{ items: { spec: { holderIdentity?: string } }[] }>(
        "GET",
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
      );
      const holders = leases.items.map((l) => l.spec.holderIdentity ?? "");
      expect(holders.length).toBe(1);
      expect(holders[0]).not.toContain("rehearsal");
    });
  } finally {
    expect((await operator.stop()).code).toBe(0);
  }
});
