/**
 * A Ptemplate's status from what its children report: counts, and conditions that name what
 * blocks it and how to fix it. Pure: the status aggregator gathers what it observes.
 */
import type { DaemonSet } from "kubernetes-types/apps/v1.d.ts";
import type { Event, Node, Pod } from "kubernetes-types/core/v1.d.ts";
import { type ChildProblem, type ConditionInput, mergeConditions, type Stored } from "../mod.ts";
import { KMM_ROLE_LABEL, type Module, type ModuleCounts } from "../crds/kmm_module.ts";
import { consumerDaemonSetName } from "./consumer_daemonset.ts";
import {
  effectiveSpec,
  type NodeCounts,
  type Ptemplate,
  type PtemplateStatus,
} from "../crds/ptemplate.ts";
import {
  diagnoseConsumers,
  imageFailure,
  imageFailureMessage,
  noMatchingNodes,
} from "./consumer_diagnosis.ts";

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
