/**
 * Why a Ptemplate's consumer pods are not all running, from what the cluster shows: the pods'
 * admission refusals, the matching nodes (readiness, taints, device capacity) and the scheduler's
 * reasons; each named so that `kubectl describe` on that object is the next step.
 */
import type { DaemonSet } from "kubernetes-types/apps/v1.d.ts";
import type { Event, Node, Pod } from "kubernetes-types/core/v1.d.ts";
import type { ConditionInput } from "../mod.ts";
import { DEVICE_RESOURCE } from "./consumer_daemonset.ts";

/** What the diagnosis looks at. */
export interface ConsumerWorld {
  /** The consumer DaemonSet (this Ptemplate's). */
  daemonSet: DaemonSet;
  /** Pods it controls. */
  pods: Pod[];
  /** Nodes whose labels match the selector; undefined when nodes cannot be seen (namespaced). */
  nodes?: Node[];
  /** The DaemonSet controller's FailedCreate events about this DaemonSet. */
  failedCreates: Event[];
  requiredDevices: number;
  /** `k=v,…`, for messages. */
  selector: string;
  /** The Module whose device plugin advertises the devices. */
  moduleName: string;
  now: Date;
}

/**
 * Taints DaemonSet pods tolerate without asking (the DaemonSet controller adds them), so they do
 * not keep a consumer off a node: a cordoned node (`unschedulable`) still runs its consumer.
 */
const TOLERATED = new Set([
  "node.kubernetes.io/not-ready:NoExecute",
  "node.kubernetes.io/unreachable:NoExecute",
  "node.kubernetes.io/disk-pressure:NoSchedule",
  "node.kubernetes.io/memory-pressure:NoSchedule",
  "node.kubernetes.io/pid-pressure:NoSchedule",
  "node.kubernetes.io/unschedulable:NoSchedule",
]);

/** Waiting reasons of a container that will not fix themselves. */
const FAILING = new Set([
  "ErrImagePull",
  "ImagePullBackOff",
  "InvalidImageName",
  "CrashLoopBackOff",
  "CreateContainerConfigError",
  "CreateContainerError",
]);

/** Waiting reasons that say the kubelet could not, or would not, pull the image. */
const IMAGE_REFUSED = new Set(["ErrImagePull", "ImagePullBackOff", "InvalidImageName"]);

/** A container of one of `pods` whose image the kubelet cannot pull, first by pod name. */
export interface ImageFailure {
  pod: string;
  namespace?: string;
  container: string;
  image?: string;
  reason: string;
  message?: string;
}

export function imageFailure(pods: Pod[]): ImageFailure | undefined {
  const byName = (a: Pod, b: Pod) => (a.metadata?.name ?? "").localeCompare(b.metadata?.name ?? "");
  for (const pod of [...pods].sort(byName)) {
    const statuses = [
      ...(pod.status?.initContainerStatuses ?? []),
      ...(pod.status?.containerStatuses ?? []),
    ];
    const failing = statuses.find((c) => IMAGE_REFUSED.has(c.state?.waiting?.reason ?? ""));
    if (!failing) continue;
    const spec = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]
      .find((c) => c.name === failing.name);
    return {
      pod: pod.metadata?.name ?? "",
      namespace: pod.metadata?.namespace,
      container: failing.name,
      image: spec?.image ?? failing.image,
      reason: failing.state!.waiting!.reason!,
      message: failing.state!.waiting!.message,
    };
  }
  return undefined;
}

/**
 * What to say about an image the kubelet refuses: which field of the Ptemplate names it, and
 * what to check. `field` is undefined for an image the operator chose (KMM's module loader).
 */
export function imageFailureMessage(failure: ImageFailure, whose: string, field?: string): string {
  const said = `${failure.reason}${failure.message ? `: ${failure.message}` : ""}`;
  const fix = failure.reason === "InvalidImageName"
    ? `the kubelet refuses the name itself; ${field ? `fix ${field}` : "report it"}`
    : `check that ${field ?? "the image"} names an image and tag that exist, and for a private ` +
      `registry that spec.imageRepoSecret names a pull secret with access to it`;
  return `${whose} pod ${failure.pod} cannot pull image ${
    failure.image ?? "(unknown)"
  } (${said}): ` +
    `${fix} (kubectl describe pod ${failure.pod}${
      failure.namespace ? ` -n ${failure.namespace}` : ""
    })`;
}

/** A FailedCreate event older than this is not news, even if pods are still missing. */
const EVENT_RELEVANCE_MS = 15 * 60_000;

function nodeName(node: Node): string {
  return node.metadata?.name ?? "?";
}

/** Why a consumer pod cannot run on `node`, if anything stands in its way. */
export function nodeUnschedulable(node: Node): string | undefined {
  const ready = node.status?.conditions?.find((c) => c.type === "Ready");
  if (ready?.status !== "True") return "is NotReady";
  const taint = node.spec?.taints?.find((t) =>
    (t.effect === "NoSchedule" || t.effect === "NoExecute") &&
    !TOLERATED.has(`${t.key}:${t.effect}`)
  );
  if (taint) {
    return `has the taint ${taint.key}${
      taint.value ? `=${taint.value}` : ""
    }:${taint.effect}, which consumer pods do not tolerate`;
  }
  return undefined;
}

/** How many devices `node` advertises (0 when its device plugin does not run there). */
export function devicesOf(node: Node): number {
  const value = node.status?.allocatable?.[DEVICE_RESOURCE] ?? "0";
  const count = Number(value);
  return Number.isFinite(count) ? count : 0;
}

/** When the event last happened, whichever API wrote it. */
function lastSeen(event: Event): number {
  const e = event as Event & { series?: { lastObservedTime?: string } };
  return Date.parse(
    e.series?.lastObservedTime ?? e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? "",
  );
}

/** A list of names, shortened: "a, b and 3 more". */
function few(names: string[]): string {
  return names.length <= 3
    ? names.join(", ")
    : `${names.slice(0, 3).join(", ")} and ${names.length - 3} more`;
}

/**
 * ConsumersReady when no node has the Ptemplate's labels (`selector`, as `k=v,k=v`): known from
 * the nodes alone, before the DaemonSet controller has looked.
 */
export function noMatchingNodes(selector: string): ConditionInput {
  return {
    type: "ConsumersReady",
    status: "False",
    reason: "NoMatchingNodes",
    message: `no node has the labels ${selector}: label nodes (kubectl label node ` +
      `<node> ${selector.replaceAll(",", " ")}) or change spec.selector`,
  };
}

/** The ConsumersReady condition once the DaemonSet exists and has seen its latest change. */
export function diagnoseConsumers(world: ConsumerWorld): ConditionInput {
  const type = "ConsumersReady";
  const ds = world.daemonSet;
  const dsName = ds.metadata?.name;
  const namespace = ds.metadata?.namespace;
  const status = ds.status!;
  const desired = status.desiredNumberScheduled ?? 0;
  const ready = status.numberReady ?? 0;
  const updated = status.updatedNumberScheduled ?? 0;
  const missingPods = (status.currentNumberScheduled ?? 0) < desired;

  // Pods the DaemonSet controller could not even create (admission refused them).
  const refused = world.failedCreates
    .filter((e) => missingPods && world.now.getTime() - lastSeen(e) < EVENT_RELEVANCE_MS)
    .sort((a, b) => lastSeen(b) - lastSeen(a))[0];
  if (refused) {
    const message = refused.message ?? "";
    if (/PodSecurity/i.test(message)) {
      return {
        type,
        status: "False",
        reason: "PodSecurityRefused",
        message: `namespace ${namespace} enforces a Pod Security level that refuses the ` +
          `privileged consumer pods (${message}); label it: kubectl label namespace ` +
          `${namespace} pod-security.kubernetes.io/enforce=privileged --overwrite, or create the ` +
          `Ptemplate in a namespace that allows privileged pods (kubectl describe daemonset ` +
          `${dsName})`,
      };
    }
    return {
      type,
      status: "False",
      reason: "ConsumerPodsRefused",
      message: `the DaemonSet controller cannot create consumer pods: ${message} (kubectl ` +
        `describe daemonset ${dsName})`,
    };
  }

  if (world.nodes) {
    if (!world.nodes.length) return noMatchingNodes(world.selector);
    const unschedulable = world.nodes.flatMap((node) => {
      const why = nodeUnschedulable(node);
      return why ? [`node ${nodeName(node)} ${why}`] : [];
    });
    if (unschedulable.length) {
      const first = world.nodes.find((n) => nodeUnschedulable(n))!;
      return {
        type,
        status: "False",
        reason: "NodesUnschedulable",
        message: `${few(unschedulable)}: it gets no consumer pod until that changes ` +
          `(kubectl describe node ${nodeName(first)})`,
      };
    }
    const noDevices = world.nodes.filter((n) => devicesOf(n) === 0).map(nodeName);
    if (noDevices.length) {
      return {
        type,
        status: "False",
        reason: "NoDeviceCapacity",
        message: `node ${few(noDevices)} matches but advertises no ${DEVICE_RESOURCE}: the ` +
          `device plugin of Module ${world.moduleName} is not running there (kubectl describe ` +
          `module ${world.moduleName}; kubectl describe node ${noDevices[0]})`,
      };
    }
    const tooFew = world.nodes.filter((n) => devicesOf(n) < world.requiredDevices);
    if (tooFew.length) {
      return {
        type,
        status: "False",
        reason: "InsufficientDevices",
        message:
          `node ${few(tooFew.map(nodeName))} advertises ${
            devicesOf(tooFew[0])
          } ${DEVICE_RESOURCE}, fewer than spec.requiredDevices (${world.requiredDevices}): ` +
          `lower spec.requiredDevices, or raise spec.maxdev so the kernel module makes more ` +
          `(kubectl describe node ${nodeName(tooFew[0])})`,
      };
    }
  }

  const image = imageFailure(world.pods);
  if (image) {
    return {
      type,
      status: "False",
      reason: "ConsumerImageFailed",
      message: imageFailureMessage(image, "consumer", "spec.consumerimage"),
    };
  }
  const byName = (a: Pod, b: Pod) => (a.metadata?.name ?? "").localeCompare(b.metadata?.name ?? "");
  for (const pod of [...world.pods].sort(byName)) {
    const name = pod.metadata?.name;
    const scheduled = pod.status?.conditions?.find((c) => c.type === "PodScheduled");
    if (pod.status?.phase === "Pending" && scheduled?.status === "False") {
      return {
        type,
        status: "False",
        reason: "ConsumersUnschedulable",
        message: `pod ${name} is Pending: ${scheduled.message ?? scheduled.reason} (kubectl ` +
          `describe pod ${name})`,
      };
    }
    const waiting = pod.status?.containerStatuses?.find((c) =>
      FAILING.has(c.state?.waiting?.reason ?? "")
    );
    if (waiting) {
      const { reason, message } = waiting.state!.waiting!;
      return {
        type,
        status: "False",
        reason: "ConsumersFailing",
        message: `pod ${name}: container ${waiting.name} is waiting: ${reason}${
          message ? `: ${message}` : ""
        } (kubectl describe pod ${name})`,
      };
    }
  }

  if (desired === 0) {
    return {
      type,
      status: "False",
      reason: "NoMatchingNodes",
      message: `no schedulable node has the labels ${world.selector}: label nodes or change ` +
        `spec.selector`,
    };
  }
  if (ready < desired || updated < desired) {
    return {
      type,
      status: "False",
      reason: "RollingOut",
      message: `${ready} of ${desired} consumer pods ready, ${updated} up to date`,
    };
  }
  return {
    type,
    status: "True",
    reason: "AllReady",
    message: `${ready} of ${desired} consumer pods ready`,
  };
}
