/**
 * The `status-aggregator` plugin: a Ptemplate's status from what its children report (KMM's
 * Module counters, the DaemonSet rollout, the consumer pods), with conditions a person can act on.
 */
import type { Node } from "kubernetes-types/core/v1.d.ts";
import {
  apiVersionOf,
  childProblem,
  controllerOf,
  DAEMON_SET,
  definePlugin,
  EVENT,
  type KubeObject,
  type NamespacedName,
  NODE,
  objectRef,
  ownershipOf,
  POD,
  reads,
  type ReconcileContext,
  type Resource,
  scoped,
  type StoreChange,
  type Stored,
  watch,
} from "../mod.ts";
import { KMM_MODULE_LABEL, MODULE } from "../crds/kmm_module.ts";
import { statusFor } from "./ptemplate_status.ts";
import { PTEMPLATE, type Ptemplate } from "../crds/ptemplate.ts";
import { consumerDaemonSetName, PTEMPLATE_UID_LABEL } from "./consumer_daemonset.ts";
import { devicesOf, nodeUnschedulable } from "./consumer_diagnosis.ts";
import { firstStatusWaitMs } from "./first_status_grace.ts";
import { PTEMPLATE_ADMISSION_READS, validatePtemplate } from "./ptemplate_admission.ts";

/** Consumer pods only: every pod of a Ptemplate's DaemonSet carries this label, no other does. */
export const CONSUMER_PODS = scoped(POD, { labelSelector: PTEMPLATE_UID_LABEL });
/** The pods KMM runs for Modules (only those: a label-scoped cache), to see their images fail. */
export const KMM_PODS = scoped(POD, { labelSelector: KMM_MODULE_LABEL });
/** What the DaemonSet controller says when admission (Pod Security, say) refuses its pods. */
export const FAILED_CREATES = scoped(EVENT, {
  fieldSelector: "involvedObject.kind=DaemonSet,reason=FailedCreate",
});

/** The Ptemplate a child (Module, DaemonSet) belongs to, through its controller reference. */
function ownerPtemplate(object: Stored<KubeObject, true>): NamespacedName[] {
  const ref = controllerOf(object);
  const ours = ref?.kind === PTEMPLATE.kind && ref.apiVersion === apiVersionOf(PTEMPLATE);
  return ours ? [{ namespace: object.metadata.namespace, name: ref.name }] : [];
}

/** True when `node` has every label of the Ptemplate's selector. */
function selects(pt: Ptemplate, node: KubeObject): boolean {
  const labels = node.metadata?.labels ?? {};
  return Object.entries(pt.spec.selector ?? {}).every(([k, v]) => labels[k] === v);
}

/** What a node tells the diagnosis; a change to anything else (a heartbeat) is not news. */
function nodeFacts(node: Node): string {
  return JSON.stringify([
    node.metadata?.labels,
    nodeUnschedulable(node),
    devicesOf(node),
  ]);
}

function nodeChanged(change: StoreChange<Node>): boolean {
  return change.type !== "updated" || nodeFacts(change.object) !== nodeFacts(change.old);
}

export const statusAggregatorPlugin = definePlugin({
  name: "status-aggregator",
  for: PTEMPLATE,
  // A Ptemplate's children change in bursts (made, then their controllers' status, a rollout's
  // pods): one status write per burst, within a fraction of a second of its last change.
  debounceMs: 300,
  // A status follows its children within a debounce: its visits are quick, but each writes, and a
  // start over thousands of Ptemplates ends their first statuses' graces together. Sixteen at a
  // time keeps up with the children's controllers; their changes (edits) go ahead of the graces'
  // requeues (bulk) in the queue.
  concurrency: 16,
  // Admission warnings: what the status would say later, said at `kubectl apply` time.
  validate: validatePtemplate,
  // What the status is made of: the caches keep only this of each kind (and the children's
  // managed fields, which the runtime compares). A Pod's spec, a Node's addresses and images,
  // and the defaults in a DaemonSet are dropped as they arrive.
  reads: [
    reads(PTEMPLATE, ["spec"]),
    reads(MODULE, ["status"]),
    reads(DAEMON_SET, ["status"]),
    reads(CONSUMER_PODS, [
      "spec.containers[*].name",
      "spec.containers[*].image",
      "spec.initContainers[*].name",
      "spec.initContainers[*].image",
      "status.phase",
      "status.conditions",
      "status.containerStatuses",
      "status.initContainerStatuses",
    ]),
    reads(KMM_PODS, [
      "spec.containers[*].name",
      "spec.containers[*].image",
      "spec.initContainers[*].name",
      "spec.initContainers[*].image",
      "status.containerStatuses",
      "status.initContainerStatuses",
    ]),
    reads(NODE, ["spec.taints", "status.conditions", "status.allocatable"]),
    reads(FAILED_CREATES, [
      "involvedObject",
      "message",
      "series",
      "lastTimestamp",
      "eventTime",
      "firstTimestamp",
    ]),
  ],
  admissionReads: PTEMPLATE_ADMISSION_READS,
  watches: [
    watch(MODULE, { map: ownerPtemplate }),
    watch(DAEMON_SET, { map: ownerPtemplate }),
    // A consumer pod belongs to a DaemonSet that belongs to a Ptemplate.
    watch(CONSUMER_PODS, {
      map: (pod, { cache }) => {
        const owner = controllerOf(pod);
        if (owner?.kind !== "DaemonSet") return [];
        const ds = cache(DAEMON_SET).get(pod.metadata.namespace, owner.name);
        return ds ? ownerPtemplate(ds) : [];
      },
      // Their label holds their Ptemplate's uid: with --shards each replica keeps only its own.
      shardKey: (pod) => pod.metadata.labels?.[PTEMPLATE_UID_LABEL],
    }),
    // Every Ptemplate whose selector matches the node, when its readiness, taints, devices or
    // labels change. Optional: a namespaced install has no cluster-wide read of nodes.
    watch(NODE, {
      optional: true,
      filter: nodeChanged,
      map: (node, { cache }) =>
        cache(PTEMPLATE).list().filter((pt) => selects(pt, node)).map(
          (pt) => ({ namespace: pt.metadata.namespace, name: pt.metadata.name }),
        ),
    }),
    // KMM's pods of a Module carry its name: the Ptemplate of that name in that namespace.
    watch(KMM_PODS, {
      map: (pod, { cache }) => {
        const name = pod.metadata.labels?.[KMM_MODULE_LABEL];
        const namespace = pod.metadata.namespace;
        return name && cache(PTEMPLATE).get(namespace, name) ? [{ namespace, name }] : [];
      },
    }),
    watch(FAILED_CREATES, {
      map: (event, { cache }) => {
        const about = event.involvedObject;
        const ds = cache(DAEMON_SET).get(about.namespace, about.name ?? "");
        return ds ? ownerPtemplate(ds) : [];
      },
    }),
  ],
  reconcile(pt, { cache, installed, metrics, problems }) {
    const namespace = pt.metadata.namespace;
    const name = pt.metadata.name;
    const kmmInstalled = installed(MODULE);
    const found = [...problems()];
    const parent = objectRef(PTEMPLATE, pt);
    /** The child if this Ptemplate controls it; otherwise undefined, and why, as a problem. */
    const ours = <C extends KubeObject>(resource: Resource<C>, child: C | undefined) => {
      if (ownershipOf(child, parent).state === "ours") return child;
      const problem = childProblem("status-aggregator", resource, child, parent);
      if (problem && !found.some((p) => p.kind === problem.kind)) found.push(problem);
      return undefined;
    };
    const module = kmmInstalled ? ours(MODULE, cache(MODULE).get(namespace, name)) : undefined;
    const daemonSet = ours(
      DAEMON_SET,
      cache(DAEMON_SET).get(namespace, consumerDaemonSetName(pt)),
    );
    // Consumers are the pods the DaemonSet controls, by UID: never pods that merely match a label.
    const dsUid = daemonSet?.metadata?.uid;
    const pods = dsUid
      ? cache(CONSUMER_PODS).ownedBy(dsUid).filter((p) =>
        controllerOf(p)?.uid === dsUid && !p.metadata?.deletionTimestamp
      )
      : [];
    const nodes = installed(NODE)
      ? cache(NODE).list().filter((node) => selects(pt, node))
      : undefined;
    const kmmPods = module
      ? cache(KMM_PODS).list({ namespace, labelSelector: `${KMM_MODULE_LABEL}=${name}` })
      : [];
    const failedCreates = dsUid
      ? cache(FAILED_CREATES).list({ namespace }).filter((e) => e.involvedObject.uid === dsUid)
      : [];
    // A new Ptemplate's children are on their way, and their controllers have yet to act: its
    // first status waits for them (their changes call us; a visit is due only when a grace ends),
    // rather than say "pending" and write again a moment later.
    const since = Math.max(
      Date.parse(pt.metadata?.creationTimestamp ?? ""),
      performance.timeOrigin,
    );
    const wait = firstStatusWaitMs({
      waitedMs: Date.now() - since,
      reported: found.length > 0 || pt.status !== undefined,
      missing: !daemonSet || (kmmInstalled && !module),
      unobserved: !daemonSet?.status ||
        (daemonSet.status.observedGeneration ?? 0) < (daemonSet.metadata?.generation ?? 0),
      outcomeKnown: nodes?.length === 0,
      // The first 100 DaemonSets the cache holds (the ones it has held longest), rather than
      // every one (with many Ptemplates, at each visit).
      controllerSeen: () =>
        cache(DAEMON_SET).list({ limit: 100 }).some((ds) => ds.status?.observedGeneration),
    });
    if (wait > 0) return { requeueAfterMs: wait };
    const status = statusFor(pt, {
      kmmInstalled,
      module,
      daemonSet,
      pods,
      kmmPods,
      problems: found,
      nodes,
      failedCreates,
    });
    const labels = { namespace: namespace ?? "", name };
    reconcileCounter(metrics).inc(labels);
    consumerGauge(metrics).set(labels, status.consumers!.length);
    return { status: status as Record<string, unknown> };
  },
  onDeleted(ref, { metrics }) {
    const labels = { namespace: ref.namespace ?? "", name: ref.name };
    consumerGauge(metrics).remove(labels);
    reconcileCounter(metrics).remove(labels);
  },
});

function reconcileCounter(metrics: ReconcileContext["metrics"]) {
  return metrics.counter("ptemplate_reconciles_total", "Reconciles of each Ptemplate's status", [
    "namespace",
    "name",
  ]);
}

function consumerGauge(metrics: ReconcileContext["metrics"]) {
  return metrics.gauge("ptemplate_consumer_pods", "Consumer pods of each Ptemplate", [
    "namespace",
    "name",
  ]);
}
