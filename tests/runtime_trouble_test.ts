/**
 * The real operator, two replicas each behind its own proxy, through a bad day: every replica cut
 * off while Ptemplates are deleted and edited, an API server restart under load, a slow API
 * server, and KMM's CRD deleted and put back. What must hold, judged from the API server's audit
 * log and the cluster's state: no child is ever made for a deleted Ptemplate, edits apply within
 * seconds once the caches are back, the leader keeps its lease on a slow link without replacing
 * its connection, and nothing of it is mistaken for a write loop.
 */
import { expect } from "expect";
import { KMM_MODULE_CRD_FILE, MODULE } from "../crds/kmm_module.ts";
import { PTEMPLATE } from "../crds/ptemplate.ts";
import type { KubeClient } from "../kube/client.ts";
import { isApiError } from "../kube/errors.ts";
import { CUSTOM_RESOURCE_DEFINITION, DAEMON_SET, EVENT, LEASE, NAMESPACE } from "../kube/kinds.ts";
import { kubeconfigYaml } from "../kube/kubeconfig_yaml.ts";
import { type AuditEvent, madeAnObject, WRITE_VERBS } from "../testing/audit_log.ts";
import type { ControlPlane } from "../testing/control_plane.ts";
import { grantClusterAdmin } from "../testing/service_account_identity.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { TcpProxy } from "../testing/tcp_proxy.ts";
import { sleep } from "../util/sleep.ts";
import { OperatorRun } from "./fixtures/operator_command.ts";

const NS = "trouble";
const COUNT = 12;
/** Longer than the lease (15 s) and than the longest reconnect backoff (30 s). */
const CUT_OFF_MS = 35_000;
/** Several renew deadlines (10 s) long; the testers' minutes add nothing the mechanism needs. */
const SLOW_MS = 60_000;
const LATENCY = { minMs: 1_000, maxMs: 3_000 };
const LEASE_NAME = "ptemplate-operator.pt.example.com";
const KMM_CRD = "modules.kmm.sigs.x-k8s.io";

const at = (event: AuditEvent) => Date.parse(event.requestReceivedTimestamp);
const names = (prefix: string, from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => `${prefix}-${from + i}`);

/** One replica of the operator: its own ServiceAccount (so the audit log tells it apart), its own proxy. */
interface Replica {
  name: string;
  username: string;
  proxy: TcpProxy;
  run: OperatorRun;
  metricsPort: number;
  healthPort: number;
}

async function startReplica(plane: ControlPlane, name: string): Promise<Replica> {
  const identity = await plane.serviceAccountIdentity("trouble-operators", name);
  await grantClusterAdmin(plane.client(), identity.username);
  const proxy = new TcpProxy({ hostname: "127.0.0.1", port: Number(new URL(plane.server).port) });
  const kubeconfig = `${plane.dir}/${name}-via-proxy.kubeconfig`;
  await Deno.writeTextFile(
    kubeconfig,
    kubeconfigYaml({ ...identity.config, server: `https://127.0.0.1:${proxy.port}` }),
  );
  const run = OperatorRun.start([
    `--kubeconfig=${kubeconfig}`,
    "--leader-elect",
    "--leader-election-namespace=default",
    "--metrics-bind-address=127.0.0.1:0",
    "--health-probe-bind-address=127.0.0.1:0",
    "--webhook-bind-address=0",
  ]);
  return {
    name,
    username: identity.username,
    proxy,
    run,
    metricsPort: await run.port("metrics"),
    healthPort: await run.port("probes"),
  };
}

/** True while the replica's last word on leadership is that it leads. */
function leads(replica: Replica): boolean {
  const said = replica.run.lines.filter((l) => /^became leader|^lost lease/.test(l.msg));
  return /^became leader/.test(said.at(-1)?.msg ?? "");
}

async function probe(replica: Replica, path: string) {
  const response = await fetch(`http://127.0.0.1:${replica.healthPort}${path}`);
  return { status: response.status, body: await response.text() };
}

async function writeLoopsCounted(replica: Replica): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${replica.metricsPort}/metrics`)).text();
  return [...text.matchAll(/^controller_write_loops_detected_total\{[^}]*\} (\d+)$/gm)]
    .reduce((sum, m) => sum + Number(m[1]), 0);
}

async function writeLoopEvents(admin: KubeClient): Promise<string[]> {
  const events = await admin.list(EVENT, { namespace: NS });
  return events.items.filter((e) => e.reason === "WriteLoopDetected").map((e) => e.message!);
}

function ptemplate(name: string, maxdev: number) {
  return {
    metadata: { name, namespace: NS },
    spec: { maxdev, selector: { pool: "trouble" } },
  };
}

/** The Module of `name` carries `max_dev=<maxdev>`. */
async function moduleHas(admin: KubeClient, name: string, maxdev: number): Promise<void> {
  const module = await admin.get(MODULE, name, { namespace: NS });
  expect(module.spec.moduleLoader.container.modprobe.parameters).toContain(`max_dev=${maxdev}`);
}

async function allConverged(admin: KubeClient, wanted: Map<string, number>): Promise<void> {
  for (const [name, maxdev] of wanted) {
    await moduleHas(admin, name, maxdev);
    await admin.get(DAEMON_SET, `${name}-consumer`, { namespace: NS });
  }
}

await integrationTest("the runtime through a cut-off, a restart, a slow server and a lost CRD", {
  controllerManager: true,
  crds: [new URL("../crds/ptemplates.pt.example.com.yaml", import.meta.url), KMM_MODULE_CRD_FILE],
  audit: true,
}, async (plane, step) => {
  const admin = plane.client();
  await admin.create(NAMESPACE, { metadata: { name: NS } });
  const replicas: Replica[] = [];
  /** What every live Ptemplate's maxdev should be. */
  const wanted = new Map<string, number>();
  const leader = () =>
    eventually(() => {
      const leading = replicas.filter(leads);
      expect(leading.map((r) => r.name)).toHaveLength(1);
      return leading[0];
    }, { timeoutMs: 60_000 });
  const operatorWrites = async () => {
    const users = new Set(replicas.map((r) => r.username));
    return (await plane.auditEvents()).filter((e) =>
      users.has(e.user.username) && WRITE_VERBS.has(e.verb)
    );
  };

  try {
    await step("two replicas converge a dozen Ptemplates", async () => {
      replicas.push(await startReplica(plane, "replica-a"), await startReplica(plane, "replica-b"));
      await leader();
      for (const name of names("pt", 0, COUNT)) {
        await admin.create(PTEMPLATE, ptemplate(name, 5));
        wanted.set(name, 5);
      }
      await eventually(() => allConverged(admin, wanted), { timeoutMs: 60_000 });
    });

    await step(
      `every replica cut off ${CUT_OFF_MS / 1000} s while Ptemplates are deleted and edited: ` +
        "no child for a deleted one, edits within seconds of the caches' return",
      async () => {
        const deleted = names("pt", 0, 4);
        const edited = names("pt", 4, 8);
        for (const replica of replicas) replica.proxy.blackhole();
        const cutAt = Date.now();
        // Meanwhile the garbage collector (not cut off) removes the deleted ones' children.
        for (const name of deleted) {
          await admin.delete(PTEMPLATE, name, { namespace: NS });
          wanted.delete(name);
        }
        for (const name of edited) {
          await admin.patch(PTEMPLATE, name, { spec: { maxdev: 7 } }, { namespace: NS });
          wanted.set(name, 7);
        }
        const deletedAt = Date.now();
        await eventually(async () => {
          for (const name of deleted) {
            const gone = await admin.get(MODULE, name, { namespace: NS }).catch((e) => e);
            expect(isApiError(gone, 404)).toBe(true);
          }
        }, { timeoutMs: 30_000 });
        await sleep(Math.max(0, cutAt + CUT_OFF_MS - Date.now()));
        for (const replica of replicas) replica.proxy.unblock();
        const back = Date.now();
        await eventually(() => allConverged(admin, wanted), { timeoutMs: 60_000 });
        const converged = Date.now() - back;
        const holder = await leader();
        // When the leader's caches listed again after the cut-off (its log says so, per kind).
        const relisted = holder.run.lines.filter((l) =>
          /listed again after/.test(l.msg) && Date.parse(l.time) >= back
        );
        const cachesBack = Math.max(...relisted.map((l) => Date.parse(l.time))) - back;
        console.error(
          `    after the network returned: the leader's caches listed again within ` +
            `${cachesBack} ms, every edit applied within ${converged} ms`,
        );
        // Anything it might still do wrong, it has had time to do.
        await sleep(5_000);
        const madeAgain = (await operatorWrites()).filter((e) =>
          madeAnObject(e) && at(e) >= deletedAt &&
          deleted.some((name) =>
            e.objectRef?.name === name || e.objectRef?.name === `${name}-consumer`
          )
        );
        expect(madeAgain.map((e) => `${e.user.username} ${e.verb} ${e.requestURI}`)).toEqual([]);
        for (const name of deleted) {
          const ds = await admin.get(DAEMON_SET, `${name}-consumer`, { namespace: NS })
            .catch((e) => e);
          expect(isApiError(ds, 404)).toBe(true);
        }
      },
    );

    await step("an API server restart under load is no write loop", async () => {
      const churning = new AbortController();
      const churn = (async () => {
        for (let n = 0; !churning.signal.aborted; n++) {
          const name = `pt-${4 + (n % (COUNT - 4))}`;
          const maxdev = 8 + (n % 40);
          await admin.patch(PTEMPLATE, name, { spec: { maxdev } }, { namespace: NS })
            .then(() => wanted.set(name, maxdev), () => {});
          await sleep(50, churning.signal);
        }
      })();
      try {
        await sleep(2_000);
        await plane.restartApiServer(3_000);
        await sleep(5_000);
      } finally {
        churning.abort();
        await churn;
      }
      await eventually(() => allConverged(admin, wanted), { timeoutMs: 60_000 });
      expect(await writeLoopEvents(admin)).toEqual([]);
      for (const replica of replicas) expect(await writeLoopsCounted(replica)).toBe(0);
    });

    await step(
      `${LATENCY.minMs / 1000}–${LATENCY.maxMs / 1000} s added to every answer for ` +
        `${SLOW_MS / 1000} s: the lease holds, edits converge, no new connection, no write loop`,
      async () => {
        const holder = await leader();
        const leaseBefore = await admin.get(LEASE, LEASE_NAME, { namespace: "default" });
        const accepted = replicas.map((r) => r.proxy.accepted);
        for (const replica of replicas) replica.proxy.slow(LATENCY);
        const slowedAt = Date.now();
        const took: number[] = [];
        for (let round = 0; Date.now() - slowedAt < SLOW_MS; round++) {
          const name = `pt-${4 + (round % (COUNT - 4))}`;
          const maxdev = 100 + round;
          const edited = Date.now();
          await admin.patch(PTEMPLATE, name, { spec: { maxdev } }, { namespace: NS });
          wanted.set(name, maxdev);
          await eventually(() => moduleHas(admin, name, maxdev), { timeoutMs: 60_000 });
          took.push(Date.now() - edited);
        }
        for (const replica of replicas) replica.proxy.slow(undefined);
        console.error(
          `    ${took.length} edits during the slowdown converged in ${Math.min(...took)}–${
            Math.max(...took)
          } ms; new connections: ${replicas.map((r, i) => r.proxy.accepted - accepted[i])}`,
        );
        const leaseAfter = await admin.get(LEASE, LEASE_NAME, { namespace: "default" });
        expect(leaseAfter.spec?.holderIdentity).toBe(leaseBefore.spec?.holderIdentity);
        expect(leaseAfter.spec?.leaseTransitions).toBe(leaseBefore.spec?.leaseTransitions);
        expect(replicas.filter(leads)).toEqual([holder]);
        expect(
          holder.run.lines.filter((l) =>
            /^lost lease/.test(l.msg) && Date.parse(l.time) >= slowedAt
          ),
        ).toEqual([]);
        expect(replicas.map((r, i) => r.proxy.accepted - accepted[i])).toEqual([0, 0]);
        // Catching up after the slowdown is no loop either.
        await eventually(() => allConverged(admin, wanted), { timeoutMs: 60_000 });
        await sleep(10_000);
        expect(await writeLoopEvents(admin)).toEqual([]);
        for (const replica of replicas) expect(await writeLoopsCounted(replica)).toBe(0);
      },
    );

    await step(
      "KMM's CRD deleted: KMMNotInstalled and /readyz say so, no write loop; back within seconds",
      async () => {
        const holder = await leader();
        await admin.delete(CUSTOM_RESOURCE_DEFINITION, KMM_CRD);
        await eventually(async () => {
          const crd = await admin.get(CUSTOM_RESOURCE_DEFINITION, KMM_CRD).catch((e) => e);
          expect(isApiError(crd, 404)).toBe(true);
        }, { timeoutMs: 60_000 });
        await eventually(async () => {
          for (const name of wanted.keys()) {
            const pt = await admin.get(PTEMPLATE, name, { namespace: NS });
            const ready = pt.status?.conditions?.find((c) => c.type === "Ready");
            expect({ name, reason: ready?.reason }).toEqual({ name, reason: "KMMNotInstalled" });
          }
        }, { timeoutMs: 30_000 });
        await eventually(async () => {
          for (const replica of replicas) {
            const readyz = await probe(replica, "/readyz");
            expect(readyz.body).toContain(
              "[+]kinds-served ok: Module (kmm.sigs.x-k8s.io/v1beta1) is not served",
            );
            expect(readyz.status).toBe(200);
          }
        });
        expect(await writeLoopEvents(admin)).toEqual([]);
        expect(await writeLoopsCounted(holder)).toBe(0);

        await plane.installCrds(KMM_MODULE_CRD_FILE);
        const installed = Date.now();
        await eventually(() => allConverged(admin, wanted), { timeoutMs: 20_000 });
        console.error(
          `    Modules back ${Date.now() - installed} ms after the CRD was Established`,
        );
        await eventually(async () => {
          const readyz = await probe(holder, "/readyz?verbose");
          expect(readyz.body).not.toContain("Module");
        });
        expect(await writeLoopEvents(admin)).toEqual([]);
      },
    );
  } finally {
    for (const replica of replicas) {
      await replica.run.stop();
      await replica.proxy.close();
      // Kept with the control plane's logs when the test fails.
      await Deno.writeTextFile(
        `${plane.dir}/${replica.name}.log`,
        replica.run.lines.map((line) => JSON.stringify(line)).join("\n"),
      );
    }
  }
});
