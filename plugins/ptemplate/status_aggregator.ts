/**
 * The `status-aggregator` plugin: a Ptemplate's status from what its children report (KMM's
 * Module counters, the DaemonSet rollout, the consumer pods), with conditions a person can act on.
 */
import type { DaemonSet } from "kubernetes-types/apps/v1.d.ts";
import type { Event, Node, Pod } from "kubernetes-types/core/v1.d.ts";
import {
  apiVersionOf,
  type ChildProblem,
  childProblem,
  type ConditionInput,
  controllerOf,
  DAEMON_SET,
  definePlugin,
  EVENT,
  type KubeObject,
  mergeConditions,
  type NamespacedName,
  NODE,
  objectRef,
  ownershipOf,
  POD,
  reads,
  type Registry,
  type Resource,
  scoped,
  type StoreChange,
  type Stored,
  watch,
} from "../../mod.ts";
import { MODULE, type Module, type ModuleCounts } from "../../crds/kmm_module.ts";
import {
  effectiveSpec,
  type NodeCounts,
  PTEMPLATE,
  type Ptemplate,
  type PtemplateStatus,
} from "../../crds/ptemplate.ts";
import { consumerDaemonSetName, PTEMPLATE_UID_LABEL } from "./consumer_daemonset.ts";
import {
  devicesOf,
  diagnoseConsumers,
  imageFailure,
  imageFailureMessage,
  nodeUnschedulable,
  noMatchingNodes,
} from "./consumer_diagnosis.ts";
import { firstStatusWaitMs } from "./first_status_grace.ts";
import { PTEMPLATE_ADMISSION_READS, validatePtemplate } from "./ptemplate_admission.ts";

/** Consumer pods only: every pod of a Ptemplate's DaemonSet carries this label, no other does. */
export const CONSUMER_PODS = scoped(POD, { labelSelector: PTEMPLATE_UID_LABEL });
/** KMM's own label on the pods of its module loader and device plugin DaemonSets. */
export const KMM_MODULE_LABEL = "kmm.node.kubernetes.io/module.name";
/** KMM's role label: `module-loader` or `device-plugin`. */
export const KMM_ROLE_LABEL = "kmm.node.kubernetes.io/role";
/** The pods KMM runs for Modules (only those: a label-scoped cache), to see their images fail. */
export const KMM_PODS = scoped(POD, { labelSelector: KMM_MODULE_LABEL });
/** What the DaemonSet controller says when admission (Pod Security, say) refuses its pods. */
export const FAILED_CREATES = scoped(EVENT, {
  fieldSelector: "involvedObject.kind=DaemonSet,reason=FailedCreate",
});

/** What the aggregator sees of a Ptemplate's world. */
export interface Observed {
  /** False while KMM's Module CRD is not installed. */
  kmmInstalled: boolean;
  /** The Module, only if this Ptemplate controls it. */
  module?: Module;
  /** The consumer DaemonSet, only if this Ptemplate controls it. */
  daemonSet?: DaemonSet;
  /** Pods controlled by the consumer DaemonSet. */
  pods: Stored<Pod, true>[];
  /** The pods KMM runs for the Module (module loader and device plugin). */
  kmmPods?: Pod[];
  /** Children that could not be written: in someone else's hands, refused, or looping. */
  problems?: ChildProblem[];
  /** Nodes whose labels match the selector; undefined when nodes cannot be seen (namespaced). */
  nodes?: Node[];
  /** The DaemonSet controller's FailedCreate events about the consumer DaemonSet. */
  failedCreates?: Event[];
}

/** Reasons that mean something must be done, as opposed to waiting: they go first in Ready. */
const BLOCKERS = new Set([
  "ChildOwnedElsewhere",
  "ChildNameTaken",
  "ChildRefused",
  "WriteLoopDetected",
  "KMMNotInstalled",
  "PodSecurityRefused",
  "ConsumerPodsRefused",
  "NoMatchingNodes",
  "NodesUnschedulable",
  "NoDeviceCapacity",
  "InsufficientDevices",
  "ConsumersUnschedulable",
  "ConsumersFailing",
  "ConsumerImageFailed",
  "DevicePluginImageFailed",
  "KernelModuleImageFailed",
]);

/** A condition that reports what went wrong with a child, if anything did. */
function problemCondition(
  type: string,
  kind: string,
  observed: Observed,
): ConditionInput | undefined {
  const problem = observed.problems?.find((p) => p.kind === kind);
  return problem && { type, status: "False", reason: problem.reason, message: problem.message };
}

function counts(kmm: ModuleCounts | undefined): NodeCounts {
  return {
    nodesMatchingSelector: kmm?.nodesMatchingSelectorNumber ?? 0,
    desired: kmm?.desiredNumber ?? 0,
    available: kmm?.availableNumber ?? 0,
  };
}

function selectorText(pt: Ptemplate): string {
  return Object.entries(pt.spec.selector ?? {}).map(([k, v]) => `${k}=${v}`).join(",");
}

/** KernelModuleLoaded / DevicePluginAvailable from one part of KMM's status. */
function kmmCondition(
  type: string,
  what: string,
  pt: Stored<Ptemplate, true>,
  observed: Observed,
  part: "moduleLoader" | "devicePlugin",
): ConditionInput {
  const name = pt.metadata.name;
  if (!observed.kmmInstalled) {
    return {
      type,
      status: "False",
      reason: "KMMNotInstalled",
      message: "KMM's Module CRD (modules.kmm.sigs.x-k8s.io) is not installed: install Kernel " +
        "Module Management; the Module is created as soon as the CRD appears",
    };
  }
  const problem = problemCondition(type, "Module", observed);
  if (problem) return problem;
  // Before KMM's counters: a pod that cannot pull its image never counts, and KMM says only
  // that it is not available. The Module's events name nothing either.
  const role = part === "devicePlugin" ? "device-plugin" : "module-loader";
  const image = imageFailure(
    (observed.kmmPods ?? []).filter((p) => p.metadata?.labels?.[KMM_ROLE_LABEL] === role),
  );
  if (image) {
    return {
      type,
      status: "False",
      reason: part === "devicePlugin" ? "DevicePluginImageFailed" : "KernelModuleImageFailed",
      message: imageFailureMessage(
        image,
        `KMM's ${role}`,
        part === "devicePlugin" ? "spec.deviceplugin" : undefined,
      ),
    };
  }
  if (!observed.module) {
    return {
      type,
      status: "Unknown",
      reason: "ModulePending",
      message: `waiting for Module ${name}`,
    };
  }
  const reported = observed.module.status?.[part];
  if (!reported) {
    return {
      type,
      status: "Unknown",
      reason: "WaitingForKMM",
      message: `KMM has not reported on Module ${name} yet; is the KMM operator running?`,
    };
  }
  const { nodesMatchingSelector, desired, available } = counts(reported);
  if (nodesMatchingSelector === 0) {
    return {
      type,
      status: "False",
      reason: "NoMatchingNodes",
      message: `no node has the labels ${selectorText(pt)}: label nodes or change spec.selector`,
    };
  }
  if (available < desired) {
    return {
      type,
      status: "False",
      reason: "Progressing",
      message: `${what} ready on ${available} of ${desired} nodes`,
    };
  }
  return {
    type,
    status: "True",
    reason: "Available",
    message: `${what} ready on ${available} of ${desired} nodes`,
  };
}

function consumersCondition(
  pt: Stored<Ptemplate, true>,
  observed: Observed,
  now: Date,
): ConditionInput {
  const type = "ConsumersReady";
  const problem = problemCondition(type, "DaemonSet", observed);
  if (problem) return problem;
  const ds = observed.daemonSet;
  if (!ds) {
    return {
      type,
      status: "Unknown",
      reason: "DaemonSetPending",
      message: `waiting for DaemonSet ${consumerDaemonSetName(pt)}`,
    };
  }
  const status = ds.status;
  if (!status || (status.observedGeneration ?? 0) < (ds.metadata?.generation ?? 0)) {
    // No node has its labels: the DaemonSet controller will schedule nothing, as it will say.
    if (observed.nodes?.length === 0) return noMatchingNodes(selectorText(pt));
    return {
      type,
      status: "False",
      reason: "RollingOut",
      message: `DaemonSet ${ds.metadata?.name} has not picked up its latest change yet`,
    };
  }
  return diagnoseConsumers({
    daemonSet: ds,
    pods: observed.pods,
    nodes: observed.nodes,
    failedCreates: observed.failedCreates ?? [],
    requiredDevices: effectiveSpec(pt.spec).requiredDevices,
    selector: selectorText(pt),
    moduleName: pt.metadata.name,
    now,
  });
}

/** The status a Ptemplate should report; `previous` keeps unchanged conditions' transition times. */
export function statusFor(
  pt: Stored<Ptemplate, true>,
  observed: Observed,
  now = new Date(),
): PtemplateStatus {
  const parts = [
    kmmCondition("KernelModuleLoaded", "kernel module", pt, observed, "moduleLoader"),
    kmmCondition("DevicePluginAvailable", "device plugin", pt, observed, "devicePlugin"),
    consumersCondition(pt, observed, now),
  ];
  // The first real blocker, with its fix, before anything that is only a matter of waiting.
  const blocking = parts.find((c) => BLOCKERS.has(c.reason)) ??
    parts.find((c) => c.status === "False") ?? parts.find((c) => c.status !== "True");
  const ready: ConditionInput = blocking
    ? {
      type: "Ready",
      status: "False",
      reason: blocking.reason,
      message: `${blocking.type}: ${blocking.message}`,
    }
    : {
      type: "Ready",
      status: "True",
      reason: "Ready",
      message: "kernel module loaded, device plugin available, consumer pods ready",
    };
  const generation = pt.metadata?.generation;
  const conditions = [ready, ...parts].map((c) => ({ ...c, observedGeneration: generation }));
  return {
    consumers: observed.pods.map((p) => p.metadata.name).sort(),
    readyConsumers: observed.daemonSet?.status?.numberReady ?? 0,
    desiredConsumers: observed.daemonSet?.status?.desiredNumberScheduled ?? 0,
    moduleLoader: counts(observed.module?.status?.moduleLoader),
    devicePlugin: counts(observed.module?.status?.devicePlugin),
    conditions: mergeConditions(pt.status?.conditions, conditions, now),
  };
}

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
      // every one (at 10,000 Ptemplates, at each visit).
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

function reconcileCounter(metrics: Registry) {
  return metrics.counter("ptemplate_reconciles_total", "Reconciles of each Ptemplate's status", [
    "namespace",
    "name",
  ]);
}

function consumerGauge(metrics: Registry) {
  return metrics.gauge("ptemplate_consumer_pods", "Consumer pods of each Ptemplate", [
    "namespace",
    "name",
  ]);
}
