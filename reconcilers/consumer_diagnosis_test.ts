import { expect } from "expect";
import type { DaemonSet } from "kubernetes-types/apps/v1.d.ts";
import type { Event, Node, Pod } from "kubernetes-types/core/v1.d.ts";
import { type ConsumerWorld, diagnoseConsumers } from "./consumer_diagnosis.ts";

const now = new Date("2026-11-23T12:00:00Z");

function node(name: string, options: Partial<{
  ready: boolean;
  /** null: the node advertises none (no device plugin there). */
  devices: string | null;
  taints: { key: string; value?: string; effect: string }[];
  unschedulable: boolean;
}> = {}): Node {
  const { ready = true, devices = "64", taints, unschedulable } = options;
  return {
    metadata: { name },
    spec: { taints, unschedulable },
    status: {
      conditions: [{ type: "Ready", status: ready ? "True" : "False" }],
      allocatable: devices === null ? {} : { "example.com/ptemplate": devices },
    },
  };
}

const ds = (desired: number, current: number, ready: number): DaemonSet => ({
  metadata: { name: "p-consumer", namespace: "team", generation: 1 },
  status: {
    observedGeneration: 1,
    desiredNumberScheduled: desired,
    currentNumberScheduled: current,
    numberReady: ready,
    updatedNumberScheduled: current,
    numberMisscheduled: 0,
  },
});

function world(overrides: Partial<ConsumerWorld>): ConsumerWorld {
  return {
    daemonSet: ds(2, 2, 2),
    pods: [],
    nodes: [node("w1"), node("w2")],
    failedCreates: [],
    requiredDevices: 2,
    selector: "role=worker",
    moduleName: "p",
    now,
    ...overrides,
  };
}

const diagnose = (overrides: Partial<ConsumerWorld>) => diagnoseConsumers(world(overrides));

Deno.test("all matching nodes run a ready consumer: AllReady", () => {
  expect(diagnose({})).toMatchObject({ status: "True", reason: "AllReady" });
  // A cordoned node still runs its consumer: DaemonSet pods tolerate it.
  expect(diagnose({ nodes: [node("w1", { unschedulable: true })] })).toMatchObject({
    status: "True",
  });
});

Deno.test("Pod Security refusing the privileged pods names the namespace and the fix", () => {
  const refused: Event = {
    metadata: { name: "e" },
    involvedObject: { kind: "DaemonSet", name: "p-consumer" },
    reason: "FailedCreate",
    message: 'Error creating: pods "p-consumer-x" is forbidden: violates PodSecurity ' +
      '"restricted:latest": privileged (container "consumer" must not set privileged=true)',
    lastTimestamp: "2026-11-23T11:59:00Z",
  };
  const condition = diagnose({ daemonSet: ds(2, 0, 0), failedCreates: [refused] });
  expect(condition).toMatchObject({ status: "False", reason: "PodSecurityRefused" });
  expect(condition.message).toContain("namespace team enforces a Pod Security level");
  expect(condition.message).toContain(
    "kubectl label namespace team pod-security.kubernetes.io/enforce=privileged --overwrite",
  );
  expect(condition.message).toContain("kubectl describe daemonset p-consumer");
  // Once the pods exist, or the event is old news, it no longer counts.
  expect(diagnose({ failedCreates: [refused] }).reason).toBe("AllReady");
  expect(
    diagnose({
      daemonSet: ds(2, 0, 0),
      failedCreates: [{ ...refused, lastTimestamp: "2026-11-23T11:00:00Z" }],
    }).reason,
  ).not.toBe("PodSecurityRefused");
});

Deno.test("nodes: none match, NotReady, tainted, no devices, too few devices", () => {
  expect(diagnose({ nodes: [] })).toMatchObject({
    reason: "NoMatchingNodes",
    message: "no node has the labels role=worker: label nodes (kubectl label node <node> " +
      "role=worker) or change spec.selector",
  });
  expect(diagnose({ nodes: [node("w1"), node("w2", { ready: false })] })).toMatchObject({
    reason: "NodesUnschedulable",
    message: "node w2 is NotReady: it gets no consumer pod until that changes (kubectl " +
      "describe node w2)",
  });
  expect(
    diagnose({
      nodes: [node("w1", { taints: [{ key: "gpu", value: "only", effect: "NoSchedule" }] })],
    }).message,
  ).toContain("node w1 has the taint gpu=only:NoSchedule, which consumer pods do not tolerate");
  expect(diagnose({ nodes: [node("w1"), node("w2", { devices: null })] })).toMatchObject({
    reason: "NoDeviceCapacity",
    message: "node w2 matches but advertises no example.com/ptemplate: the device plugin of " +
      "Module p is not running there (kubectl describe module p; kubectl describe node w2)",
  });
  expect(diagnose({ nodes: [node("w1", { devices: "1" })] })).toMatchObject({
    reason: "InsufficientDevices",
    message: expect.stringContaining(
      "node w1 advertises 1 example.com/ptemplate, fewer than spec.requiredDevices (2)",
    ),
  });
  // Without a view of nodes (a namespaced install), the rest is still told.
  expect(diagnose({ nodes: undefined }).reason).toBe("AllReady");
});

Deno.test("pods: the scheduler's reason for a Pending pod, a container that keeps failing", () => {
  const pending: Pod = {
    metadata: { name: "p-consumer-a" },
    status: {
      phase: "Pending",
      conditions: [{
        type: "PodScheduled",
        status: "False",
        reason: "Unschedulable",
        message: "0/2 nodes are available: 2 Insufficient example.com/ptemplate.",
      }],
    },
  };
  expect(diagnose({ daemonSet: ds(2, 2, 1), pods: [pending] })).toMatchObject({
    reason: "ConsumersUnschedulable",
    message: "pod p-consumer-a is Pending: 0/2 nodes are available: 2 Insufficient " +
      "example.com/ptemplate. (kubectl describe pod p-consumer-a)",
  });
  const pulling: Pod = {
    metadata: { name: "p-consumer-b" },
    status: {
      phase: "Pending",
      containerStatuses: [{
        name: "consumer",
        image: "x",
        imageID: "",
        ready: false,
        restartCount: 0,
        state: { waiting: { reason: "ImagePullBackOff", message: "Back-off pulling image" } },
      }],
    },
  };
  expect(diagnose({ daemonSet: ds(2, 2, 1), pods: [pulling] })).toMatchObject({
    reason: "ConsumerImageFailed",
    message: "consumer pod p-consumer-b cannot pull image x (ImagePullBackOff: Back-off pulling " +
      "image): check that spec.consumerimage names an image and tag that exist, and for a " +
      "private registry that spec.imageRepoSecret names a pull secret with access to it " +
      "(kubectl describe pod p-consumer-b)",
  });
  const invalid: Pod = {
    metadata: { name: "p-consumer-c", namespace: "ns" },
    spec: { containers: [{ name: "consumer", image: "a".repeat(64) }] },
    status: {
      phase: "Pending",
      containerStatuses: [{
        name: "consumer",
        image: "",
        imageID: "",
        ready: false,
        restartCount: 0,
        state: { waiting: { reason: "InvalidImageName", message: "Failed to apply default tag" } },
      }],
    },
  };
  expect(diagnose({ daemonSet: ds(2, 2, 1), pods: [invalid] })).toMatchObject({
    reason: "ConsumerImageFailed",
    message: expect.stringMatching(
      /^consumer pod p-consumer-c cannot pull image a{64} \(InvalidImageName: .*\): the kubelet refuses the name itself; fix spec\.consumerimage \(kubectl describe pod p-consumer-c -n ns\)$/,
    ),
  });
  const crashing = structuredClone(pulling);
  crashing.status!.containerStatuses![0].state = { waiting: { reason: "CrashLoopBackOff" } };
  expect(diagnose({ daemonSet: ds(2, 2, 1), pods: [crashing] })).toMatchObject({
    reason: "ConsumersFailing",
  });
  expect(diagnose({ daemonSet: ds(2, 2, 1) })).toMatchObject({ reason: "RollingOut" });
});
