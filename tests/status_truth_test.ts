/**
 * The status names the first real blocker, with the object to look at and the fix, and clears
 * when the blocker goes: a child refused by the API server, matching nodes that are NotReady or
 * tainted, nodes without the device or with too few, consumer pods refused by Pod Security, and a
 * pod the scheduler cannot place. Real control plane, kwok nodes.
 */
import { sleep } from "../util/sleep.ts";
import { expect } from "expect";
import { KMM_MODULE_CRD_FILE } from "../crds/kmm_module.ts";
import { PTEMPLATE } from "../crds/ptemplate.ts";
import { KubeClient } from "../kube/client.ts";
import type { Unstructured } from "../kube/object.ts";
import { NAMESPACE, NODE, POD } from "../kube/kinds.ts";
import type { Resource } from "../kube/resource.ts";
import { PTEMPLATE_PLUGINS } from "../reconcilers/mod.ts";
import { Manager } from "../runtime/manager/mod.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";

const NS = "truth";
const PTEMPLATE_CRD_FILE = new URL("../crds/ptemplates.pt.example.com.yaml", import.meta.url);
const ALLOCATABLE = { cpu: "32", memory: "256Gi", pods: "110", "example.com/ptemplate": "64" };

const policy = (kind: string, plural: string): Resource => ({
  group: "admissionregistration.k8s.io",
  version: "v1",
  kind,
  plural,
  namespaced: false,
});
const VAP = policy("ValidatingAdmissionPolicy", "validatingadmissionpolicies");
const VAP_BINDING = policy("ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings");

interface Blocker {
  ptemplate: string;
  namespace?: string;
  selector: Record<string, string>;
  requiredDevices?: number;
  reason: string;
  /** Texts the Ready message must contain: the object to describe, the fix. */
  says: string[];
}

const BLOCKERS: Blocker[] = [
  {
    ptemplate: "refused",
    selector: { pool: "good" },
    reason: "ChildRefused",
    says: ["the API server refused DaemonSet refused-consumer", "no consumers here, on purpose"],
  },
  {
    ptemplate: "tainted",
    selector: { pool: "taint" },
    reason: "NodesUnschedulable",
    says: ["node taint-1 has the taint dedicated=gpu:NoSchedule", "kubectl describe node taint-1"],
  },
  {
    ptemplate: "lame",
    selector: { pool: "lame" },
    reason: "NodesUnschedulable",
    says: ["node lame-1 is NotReady", "kubectl describe node lame-1"],
  },
  {
    ptemplate: "bare",
    selector: { pool: "bare" },
    reason: "NoDeviceCapacity",
    says: ["node bare-1 matches but advertises no example.com/ptemplate", "Module bare"],
  },
  {
    ptemplate: "small",
    selector: { pool: "small" },
    requiredDevices: 2,
    reason: "InsufficientDevices",
    says: ["node small-1 advertises 1 example.com/ptemplate", "spec.requiredDevices (2)"],
  },
  {
    ptemplate: "restricted",
    namespace: "restricted",
    selector: { pool: "good" },
    reason: "PodSecurityRefused",
    says: [
      "namespace restricted enforces a Pod Security level",
      "kubectl label namespace restricted pod-security.kubernetes.io/enforce=privileged",
    ],
  },
  {
    ptemplate: "full",
    selector: { pool: "full" },
    reason: "ConsumersUnschedulable",
    says: ["is Pending: 0/", "Too many pods", "kubectl describe pod full-consumer-"],
  },
];

await integrationTest("the status names the real blocker, and clears", {
  controllerManager: true,
  scheduler: true,
  kwok: true,
  crds: [PTEMPLATE_CRD_FILE, KMM_MODULE_CRD_FILE],
}, async (plane, step) => {
  const admin = plane.client();
  await admin.create(NAMESPACE, { metadata: { name: NS } });
  await admin.create(NAMESPACE, {
    metadata: {
      name: "restricted",
      labels: { "pod-security.kubernetes.io/enforce": "restricted" },
    },
  });
  const client = new KubeClient(plane.adminConfig);
  const manager = new Manager({ client, plugins: PTEMPLATE_PLUGINS });
  const stop = new AbortController();
  const running = manager.run(stop.signal);
  const setStatus = (name: string, status: Record<string, unknown>) =>
    admin.patch(NODE, name, { status }, { subresource: "status" });
  const conditionsOf = async (blocker: Blocker) => {
    const pt = await admin.get(PTEMPLATE, blocker.ptemplate, {
      namespace: blocker.namespace ?? NS,
    });
    return {
      ready: pt.status?.conditions?.find((c) => c.type === "Ready"),
      consumers: pt.status?.conditions?.find((c) => c.type === "ConsumersReady"),
    };
  };

  try {
    await step("every blocker at once", async () => {
      await plane.createNodes(
        { name: "good-1", labels: { pool: "good" } },
        { name: "taint-1", labels: { pool: "taint" } },
        { name: "bare-1", labels: { pool: "bare" } },
        { name: "small-1", labels: { pool: "small" } },
        { name: "full-1", labels: { pool: "full" } },
      );
      await admin.patch(NODE, "taint-1", {
        spec: { taints: [{ key: "dedicated", value: "gpu", effect: "NoSchedule" }] },
      });
      await setStatus("bare-1", {
        allocatable: { ...ALLOCATABLE, "example.com/ptemplate": null },
        capacity: { ...ALLOCATABLE, "example.com/ptemplate": null },
      });
      await setStatus("small-1", {
        allocatable: { ...ALLOCATABLE, "example.com/ptemplate": "1" },
        capacity: { ...ALLOCATABLE, "example.com/ptemplate": "1" },
      });
      await setStatus("full-1", { allocatable: { ...ALLOCATABLE, pods: "0" } });
      // A node no kubelet (nor kwok) looks after: NotReady.
      await admin.create(NODE, { metadata: { name: "lame-1", labels: { pool: "lame" } } });
      await setStatus("lame-1", {
        conditions: [{ type: "Ready", status: "False", reason: "KubeletNotReady" }],
        allocatable: ALLOCATABLE,
        capacity: ALLOCATABLE,
      });
      await admin.create(VAP, {
        metadata: { name: "no-refused-consumers" },
        spec: {
          failurePolicy: "Fail",
          matchConstraints: {
            resourceRules: [{
              apiGroups: ["apps"],
              apiVersions: ["v1"],
              operations: ["CREATE", "UPDATE"],
              resources: ["daemonsets"],
            }],
          },
          validations: [{
            expression: "object.metadata.name != 'refused-consumer'",
            message: "no consumers here, on purpose",
          }],
        },
      });
      await admin.create(VAP_BINDING, {
        metadata: { name: "no-refused-consumers" },
        spec: { policyName: "no-refused-consumers", validationActions: ["Deny"] },
      });
      // Policies take effect after the API server has loaded them.
      await sleep(2_000);
      for (const blocker of BLOCKERS) {
        await admin.create(PTEMPLATE, {
          metadata: { name: blocker.ptemplate, namespace: blocker.namespace ?? NS },
          spec: { selector: blocker.selector, requiredDevices: blocker.requiredDevices },
        } as Unstructured);
      }
      for (const blocker of BLOCKERS) {
        await eventually(async () => {
          const { ready } = await conditionsOf(blocker);
          expect({ ptemplate: blocker.ptemplate, reason: ready?.reason }).toEqual({
            ptemplate: blocker.ptemplate,
            reason: blocker.reason,
          });
          for (const text of blocker.says) expect(ready?.message).toContain(text);
        }, { timeoutMs: 60_000 });
      }
    });

    await step("every blocker removed: each clears", async () => {
      await admin.delete(VAP_BINDING, "no-refused-consumers");
      await admin.patch(NODE, "taint-1", { spec: { taints: null } });
      await setStatus("lame-1", {
        conditions: [{ type: "Ready", status: "True", reason: "KubeletReady" }],
      });
      // What the node-lifecycle controller (not run here) does once a node is Ready.
      await admin.patch(NODE, "lame-1", { spec: { taints: null } });
      await setStatus("bare-1", { allocatable: ALLOCATABLE, capacity: ALLOCATABLE });
      await setStatus("small-1", {
        allocatable: { ...ALLOCATABLE, "example.com/ptemplate": "4" },
        capacity: { ...ALLOCATABLE, "example.com/ptemplate": "4" },
      });
      await setStatus("full-1", { allocatable: ALLOCATABLE });
      await admin.patch(NAMESPACE, "restricted", {
        metadata: { labels: { "pod-security.kubernetes.io/enforce": "privileged" } },
      });
      for (const blocker of BLOCKERS) {
        await eventually(async () => {
          const { ready } = await conditionsOf(blocker);
          expect({ ptemplate: blocker.ptemplate, reason: ready?.reason }).not.toEqual({
            ptemplate: blocker.ptemplate,
            reason: blocker.reason,
          });
        }, { timeoutMs: 90_000 });
      }
      // Where a kwok node now runs the consumer, the consumers are ready: only KMM, which
      // no one runs here, is missing.
      for (const name of ["refused", "tainted", "bare", "small", "restricted", "full"]) {
        const blocker = BLOCKERS.find((b) => b.ptemplate === name)!;
        await eventually(async () => {
          const { consumers, ready } = await conditionsOf(blocker);
          expect({ name, consumers: consumers?.reason }).toEqual({ name, consumers: "AllReady" });
          expect(ready?.reason).toBe("WaitingForKMM");
        }, { timeoutMs: 90_000 });
      }
    });

    await step(
      "an image the kubelet refuses is named with its field, not WaitingForKMM",
      async () => {
        await admin.create(PTEMPLATE, {
          metadata: { name: "pulls", namespace: NS },
          spec: { selector: { pool: "good" }, deviceplugin: "quay.io/a/plugin:gone" },
        } as Unstructured);
        // KMM's device-plugin pod as KMM makes it (no KMM runs here), kept off every node, and its
        // status as the kubelet writes it when the pull fails.
        await admin.create(POD, {
          metadata: {
            name: "pulls-device-plugin-x",
            namespace: NS,
            labels: {
              "kmm.node.kubernetes.io/module.name": "pulls",
              "kmm.node.kubernetes.io/role": "device-plugin",
            },
          },
          spec: {
            nodeSelector: { nowhere: "at-all" },
            containers: [{ name: "device-plugin", image: "quay.io/a/plugin:gone" }],
          },
        });
        await admin.patch(POD, "pulls-device-plugin-x", {
          status: {
            containerStatuses: [{
              name: "device-plugin",
              image: "quay.io/a/plugin:gone",
              imageID: "",
              ready: false,
              restartCount: 0,
              state: { waiting: { reason: "ErrImagePull", message: "manifest unknown" } },
            }],
          },
        }, { namespace: NS, subresource: "status" });
        await eventually(async () => {
          const pt = await admin.get(PTEMPLATE, "pulls", {
            namespace: NS,
          });
          const ready = pt.status?.conditions?.find((c) => c.type === "Ready");
          expect(ready?.reason).toBe("DevicePluginImageFailed");
          for (
            const text of [
              "pod pulls-device-plugin-x cannot pull image quay.io/a/plugin:gone",
              "ErrImagePull: manifest unknown",
              "spec.deviceplugin",
              "kubectl describe pod pulls-device-plugin-x -n truth",
            ]
          ) expect(ready?.message).toContain(text);
        }, { timeoutMs: 30_000 });
      },
    );
  } finally {
    stop.abort();
    await running;
    client.close();
  }
});
