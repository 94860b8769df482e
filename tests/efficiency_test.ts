/**
 * What efficiency the operator owes, in counts that do not depend on the machine's speed: the
 * writes a Ptemplate costs, none once converged or after a restart, one per child a change
 * changes, and a cache that holds only what plugins read. Times and memory are measured by `deno task bench:scale`, not here.
 */
import { expect } from "expect";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import { KMM_MODULE_CRD_FILE, MODULE } from "../crds/kmm_module.ts";
import { PTEMPLATE, type Ptemplate } from "../crds/ptemplate.ts";
import type { KubeObject, Unstructured } from "../kube/object.ts";
import { DAEMON_SET, NAMESPACE, NODE, POD } from "../kube/kinds.ts";
import { PTEMPLATE_PLUGINS } from "../reconcilers/mod.ts";
import { type AuditEvent, madeAnObject, WRITE_VERBS } from "../testing/audit_log.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { runManager, type RunningManager } from "../testing/running_manager.ts";
import { sleep } from "../util/sleep.ts";

const NS = "eff";
const AGENT = "efficiency-test-operator";
const WORKER = { "node-role.kubernetes.io/worker": "worker" };
const PTEMPLATE_CRD_FILE = new URL("../crds/ptemplates.pt.example.com.yaml", import.meta.url);
/** Half select the two worker nodes (consumer pods run), half select none. */
const COUNT = 12;
/** The bound, Events included. */
const WRITES_PER_PTEMPLATE = 4.5;
const QUIET_MS = 10_000;
const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";

const at = (e: AuditEvent) => Date.parse(e.requestReceivedTimestamp);

/** How many visits of `plugin` succeeded, from the operator's own metrics. */
function reconciles(operator: RunningManager, plugin: string): number {
  const line = new RegExp(
    `^controller_runtime_reconcile_total\\{controller="${plugin}",result="success"\\} (\\d+)`,
    "m",
  );
  return Number(operator.manager.registry.render().match(line)?.[1] ?? 0);
}

await integrationTest("efficiency: writes per Ptemplate, quiet when converged, a slim cache", {
  controllerManager: true,
  scheduler: true,
  kwok: true,
  audit: true,
  crds: [PTEMPLATE_CRD_FILE, KMM_MODULE_CRD_FILE],
}, async (plane, step) => {
  const admin = plane.client();
  for (const name of [NS, "elsewhere"]) {
    await admin.create(NAMESPACE, { metadata: { name } });
  }
  await plane.createNodes(
    { name: "worker-1", labels: WORKER },
    { name: "worker-2", labels: WORKER },
  );
  // Pods that are none of ours, here and elsewhere: kubectl-applied, so they carry the
  // last-applied annotation; none may reach the cache.
  for (
    const [namespace, name] of [["elsewhere", "other-1"], ["elsewhere", "other-2"], [NS, "mine"]]
  ) {
    const pod = {
      metadata: { name, namespace, labels: { app: "other" } },
      spec: { containers: [{ name: "c", image: "registry.example/other:1" }] },
    };
    await admin.create(POD, {
      ...pod,
      metadata: { ...pod.metadata, annotations: { [LAST_APPLIED]: JSON.stringify(pod) } },
    });
  }
  for (let i = 0; i < COUNT; i++) {
    await admin.create(
      PTEMPLATE,
      {
        metadata: {
          name: `pt-${i}`,
          namespace: NS,
          annotations: { [LAST_APPLIED]: JSON.stringify({ spec: { maxdev: 4 } }) },
        },
        spec: { selector: i % 2 ? WORKER : { pool: "none" }, maxdev: 4 },
      } as Ptemplate & Unstructured,
    );
  }

  const ours = async (from = 0) =>
    (await plane.auditEvents()).filter((e) =>
      e.userAgent === AGENT && WRITE_VERBS.has(e.verb) && at(e) >= from
    );
  const start = () =>
    runManager(plane.adminConfig, { userAgent: AGENT, plugins: PTEMPLATE_PLUGINS });
  /** Until the operator's last write is `QUIET_MS` old. */
  const quiet = () =>
    eventually(async () => {
      const writes = await ours();
      expect(writes.length).toBeGreaterThan(0);
      expect(Date.now() - at(writes.at(-1)!)).toBeGreaterThan(QUIET_MS);
    }, { timeoutMs: 120_000, intervalMs: 2_000 });

  const started = Date.now();
  let operator = start();
  try {
    await step("every Ptemplate converges: children, consumer pods, a true status", async () => {
      await eventually(async () => {
        const pts = (await admin.list(PTEMPLATE, { namespace: NS })).items;
        expect(pts).toHaveLength(COUNT);
        for (const pt of pts) {
          const selecting = pt.spec.selector?.["node-role.kubernetes.io/worker"] === "worker";
          expect(pt.status?.observedGeneration).toBe(pt.metadata?.generation);
          expect(pt.status?.readyConsumers ?? 0).toBe(selecting ? 2 : 0);
        }
      }, { timeoutMs: 90_000 });
      await quiet();
    });

    await step(
      `a Ptemplate costs at most ${WRITES_PER_PTEMPLATE} writes, Events included, and no child twice`,
      async () => {
        const writes = await ours(started);
        // An apply that made the object counts as a create.
        const count = (verb: string, resource: string, subresource?: string) =>
          writes.filter((e) =>
            (madeAnObject(e) ? "create" : e.verb) === verb &&
            e.objectRef?.resource === resource && e.objectRef?.subresource === subresource
          ).length;
        expect(count("create", "modules")).toBe(COUNT);
        expect(count("create", "daemonsets")).toBe(COUNT);
        // One Event per reconcile that made children, however many children it made.
        expect(count("create", "events")).toBeLessThanOrEqual(COUNT);
        // The status is written once per real change, not once per intermediate state: a Ptemplate
        // whose pods became ready may take a second write, one that selects nothing only one.
        expect(count("patch", "ptemplates", "status")).toBeLessThanOrEqual(COUNT * 1.5);
        const other = writes.filter((e) =>
          !["modules", "daemonsets", "events", "ptemplates"].includes(e.objectRef?.resource ?? "")
        );
        expect(other.map((e) => `${e.verb} ${e.objectRef?.resource}`)).toEqual([]);
        expect(writes.length / COUNT).toBeLessThanOrEqual(WRITES_PER_PTEMPLATE);
      },
    );

    await step("the plugins that make children visit each Ptemplate once on a cold start", () => {
      // Nothing they read changed after they made the children: their own creates' answers,
      // the DaemonSet controller's status and the status plugin's writes are no news to them.
      for (const plugin of ["kmm-module", "consumer-daemonset"]) {
        expect({ plugin, visits: reconciles(operator, plugin) }).toEqual({ plugin, visits: COUNT });
      }
    });

    await step("the status a plugin wrote is no news to it", () => {
      // Its echo would visit each Ptemplate once more for nothing, in the lane for edits.
      const status = operator.manager.controllers.find((c) => c.name === "status-aggregator")!;
      const causes = Array.from(
        { length: COUNT },
        (_, i) => `Ptemplate.pt.example.com/${NS}/pt-${i}`,
      )
        .flatMap((key) => status.history.of(key).flatMap((visit) => visit.causes));
      expect(causes.length).toBeGreaterThanOrEqual(COUNT);
      expect(causes.filter((c) => /^updated Ptemplate .*\(status\)$/.test(c))).toEqual([]);
    });

    await step("the cache holds only what plugins read", () => {
      const cached = operator.manager.pool.all().flatMap((informer) =>
        informer.store.list().map((o) => o as KubeObject)
      );
      expect(cached.length).toBeGreaterThan(COUNT * 3);
      for (const object of cached) {
        for (const entry of object.metadata?.managedFields ?? []) {
          expect(Object.keys(entry).sort()).not.toContain("fieldsV1");
        }
        expect(Object.keys(object.metadata?.annotations ?? {})).not.toContain(LAST_APPLIED);
      }
      const nodes = operator.manager.pool.all().find((i) => i.resource.plural === NODE.plural);
      for (const node of nodes?.store.list() ?? []) {
        expect((node as { status?: { images?: unknown } }).status?.images).toBeUndefined();
      }
      // Pods: only the consumer pods of our DaemonSets, none of the others.
      const pods = operator.manager.pool.all()
        .filter((i) => i.resource.plural === POD.plural)
        .flatMap((i) => i.store.list() as (Pod & KubeObject)[]);
      expect(pods).toHaveLength(COUNT); // 6 selecting Ptemplates × 2 nodes
      for (const pod of pods) {
        expect(pod.metadata?.ownerReferences?.[0]?.kind).toBe("DaemonSet");
        expect(pod.metadata?.name).not.toMatch(/^(other|mine)/);
      }
    });

    await step("converged, it writes nothing while idle", async () => {
      const from = Date.now();
      await sleep(QUIET_MS);
      expect(await ours(from)).toEqual([]);
    });

    await step("restarted over the converged state, it writes nothing", async () => {
      await operator.stop();
      const from = Date.now();
      operator = start();
      await eventually(() =>
        expect(operator.manager.pool.all().every((i) => i.hasSynced)).toBe(true)
      );
      // It looked at every Ptemplate (each plugin reconciled each), and wrote nothing.
      await eventually(() => {
        for (const plugin of ["kmm-module", "consumer-daemonset"]) {
          expect(reconciles(operator, plugin)).toBeGreaterThanOrEqual(COUNT);
        }
      });
      await sleep(QUIET_MS);
      expect(await ours(from)).toEqual([]);
    });

    await step("a change reaches each child in one write, and what it drops is gone", async () => {
      const edited = Array.from({ length: COUNT / 2 }, (_, i) => `pt-${2 * i}`);
      const from = Date.now();
      for (const name of edited) {
        await admin.patch(PTEMPLATE, name, {
          spec: { selector: { pool: null, zone: "none" } },
        } as Unstructured, { namespace: NS });
      }
      await eventually(async () => {
        for (const name of edited) {
          const module = await admin.get(MODULE, name, { namespace: NS });
          expect(module.spec.selector).toEqual({ zone: "none" });
          const consumer = await admin.get(DAEMON_SET, `${name}-consumer`, { namespace: NS });
          expect(consumer.spec?.template.spec?.nodeSelector).toEqual({ zone: "none" });
        }
      });
      await quiet();
      const childWrites = (await ours(from)).filter((e) =>
        ["modules", "daemonsets"].includes(e.objectRef?.resource ?? "")
      ).map((e) => `${e.verb} ${e.objectRef?.resource} ${e.objectRef?.name}`).sort();
      expect(childWrites).toEqual(
        edited.flatMap((name) => [
          `patch daemonsets ${name}-consumer`,
          `patch modules ${name}`,
        ]).sort(),
      );
    });
  } finally {
    await operator.stop();
  }
});
