/**
 * The cluster bench:scale measures in, made the same for every operator it runs: the control
 * plane's options, the Ptemplates (and nodes and unrelated pods) it holds, and the waits for an
 * operator's children and for its quiet after.
 */
import { KMM_MODULE_CRD_FILE, MODULE } from "../crds/kmm_module.ts";
import { PTEMPLATE } from "../crds/ptemplate.ts";
import type { KubeClient } from "../kube/client.ts";
import { DAEMON_SET, NAMESPACE, POD } from "../kube/kinds.ts";
import type { Unstructured } from "../kube/object.ts";
import type { Resource } from "../kube/resource.ts";
import { type AuditEvent, AuditTail, WRITE_VERBS } from "../testing/audit_log.ts";
import { ControlPlane } from "../testing/control_plane.ts";
import { daemonSetFor, moduleFor } from "../reconcilers/mod.ts";
import { sleep } from "../util/sleep.ts";
import { cpuOf } from "./process_stats.ts";
import { at, isWork } from "./scale_figures.ts";

/** What the cluster holds before an operator starts. */
export interface ScaleCluster {
  /** Ptemplates in the `scale` namespace. */
  count: number;
  /** kwok nodes the Ptemplates select (0: they select none). */
  nodes: number;
  /** Pods of no Ptemplate, in ten other namespaces. */
  unrelatedPods: number;
  /** The ShardedListAndWatch feature gate. */
  gate: boolean;
}

/** How many objects are created at once. */
export const WIDTH = 16;

/** Runs `work` for each of `count` items, `width` at a time. */
export async function wide(
  count: number,
  width: number,
  work: (i: number) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < count) await work(next++);
  }));
}

/** Objects of `resource` in `namespace`, counted without listing them all. */
export async function count(
  client: KubeClient,
  resource: Resource,
  namespace: string,
): Promise<number> {
  const page = await client.list(resource, { namespace, limit: 1 });
  return page.items.length + (page.metadata.remainingItemCount ?? 0);
}

/** The node labels the Ptemplates select: the nodes' when there are nodes, else none's. */
export function selectorOf(cluster: ScaleCluster): Record<string, string> {
  return cluster.nodes ? { role: "worker" } : { pool: "none" };
}

/** A control plane with the Ptemplate and Module CRDs and an audit log, as every run has. */
export function startPlane(
  cluster: ScaleCluster,
  progress: (line: string) => void,
): Promise<ControlPlane> {
  return ControlPlane.start({
    controllerManager: true,
    scheduler: cluster.nodes > 0,
    kwok: cluster.nodes > 0,
    audit: true,
    featureGates: { ShardedListAndWatch: cluster.gate },
    crds: [
      new URL("../crds/ptemplates.pt.example.com.yaml", import.meta.url),
      KMM_MODULE_CRD_FILE,
    ],
    progress,
  });
}

/** Makes the nodes, the unrelated pods and the Ptemplates (in namespace `scale`). */
export async function populate(
  plane: ControlPlane,
  cluster: ScaleCluster,
  progress: (line: string) => void,
): Promise<void> {
  const admin = plane.client();
  await admin.create(NAMESPACE, { metadata: { name: "scale" } });
  const selector = selectorOf(cluster);
  if (cluster.nodes) {
    await plane.createNodes(
      ...Array.from({ length: cluster.nodes }, (_, i) => ({ name: `w-${i}`, labels: selector })),
    );
  }
  if (cluster.unrelatedPods) {
    for (let n = 0; n < 10; n++) {
      await admin.create(NAMESPACE, { metadata: { name: `unrelated-${n}` } });
    }
    await wide(cluster.unrelatedPods, WIDTH, (i) =>
      admin.create(POD, {
        metadata: { name: `u-${i}`, namespace: `unrelated-${i % 10}`, labels: { app: "other" } },
        spec: {
          nodeSelector: { nowhere: "true" },
          containers: [{ name: "c", image: "registry.example/other:1" }],
        },
      }));
    progress(`${cluster.unrelatedPods} unrelated pods made`);
  }
  await wide(cluster.count, WIDTH, (i) =>
    admin.create(PTEMPLATE, {
      metadata: { name: `pt-${i}`, namespace: "scale" },
      spec: { selector, maxdev: 4 },
    } as Unstructured));
  progress(`${cluster.count} Ptemplates made`);
}

/** Waits until every Ptemplate in `scale` has its Module and its DaemonSet. */
export async function waitForChildren(admin: KubeClient, ptemplates: number): Promise<void> {
  while (
    (await count(admin, MODULE, "scale")) < ptemplates ||
    (await count(admin, DAEMON_SET, "scale")) < ptemplates
  ) await sleep(500);
}

/** The work writes of `username` so far. */
export async function writesOf(plane: ControlPlane, username: string): Promise<AuditEvent[]> {
  return (await plane.auditEvents()).filter((e) => e.user.username === username && isWork(e));
}

/**
 * How long an operator must have written nothing to be done. Longer than the gaps in its work on
 * a busy machine: a status waits on the DaemonSet controller, which at 10,000 DaemonSets falls
 * minutes behind and may pause for seconds, and a shorter wait stops measuring with writes to
 * come.
 */
export const QUIET_MS = 20_000;

/**
 * Waits until `username` has written nothing for QUIET_MS, nor has the DaemonSet controller
 * written a status in `scale`. An operator that owns DaemonSets is woken by each of those status
 * writes whether it writes a status of its own or not, so its CPU is compared up to the same
 * moment: when the cluster has settled, not at its own last write.
 */
export async function waitForQuiet(plane: ControlPlane, username: string): Promise<void> {
  // Read as the log grows: parsed whole at every look, it loads the machine being measured.
  const audit = new AuditTail(plane.dir);
  let last: AuditEvent | undefined;
  for (;;) {
    await sleep(5_000);
    const relevant = (await audit.read()).filter((e) =>
      e.user.username === username ? isWork(e) : isDaemonSetStatus(e)
    );
    last = relevant.at(-1) ?? last;
    if (!last || Date.now() - at(last) > QUIET_MS) return;
  }
}

/** A status write to one of the bench's DaemonSets: the DaemonSet controller's work. */
function isDaemonSetStatus(e: AuditEvent): boolean {
  return e.objectRef?.resource === "daemonsets" && e.objectRef.subresource === "status" &&
    e.objectRef.namespace === "scale" && WRITE_VERBS.has(e.verb);
}

/** How long a raw client took to make the same children, and the CPU that went into it. */
export interface ReferenceFigures {
  seconds: number;
  controlPlane: number;
  client: number;
}

/**
 * The raw client: the same 2N children from a plain client, 16 at a time, in namespace
 * `reference` of `plane`, measured right after an operator's run on it: what the API server can
 * do in that hour, the limit for every operator.
 */
export async function measureReference(
  plane: ControlPlane,
  cluster: ScaleCluster,
): Promise<ReferenceFigures> {
  const admin = plane.client();
  await admin.create(NAMESPACE, { metadata: { name: "reference" } });
  const selector = selectorOf(cluster);
  const objects = Array.from({ length: cluster.count }, (_, i) => {
    const pt = {
      metadata: { name: `pt-${i}`, namespace: "reference", uid: crypto.randomUUID() },
      spec: { selector, maxdev: 4 },
    };
    return [moduleFor(pt), daemonSetFor(pt)] as const;
  }).flat();
  const started = performance.now();
  const planeBefore = await cpuOf(plane.pids());
  const clientBefore = await cpuOf([Deno.pid]);
  await wide(objects.length, WIDTH, (i) => {
    const object = objects[i];
    return admin.create(object.kind === "Module" ? MODULE : DAEMON_SET, object as Unstructured);
  });
  return {
    seconds: (performance.now() - started) / 1000,
    controlPlane: await cpuOf(plane.pids()) - planeBefore,
    client: await cpuOf([Deno.pid]) - clientBefore,
  };
}
