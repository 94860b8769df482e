import { expect } from "expect";
import type { DaemonSet } from "kubernetes-types/apps/v1.d.ts";
import type { Module } from "../crds/kmm_module.ts";
import type { Ptemplate } from "../crds/ptemplate.ts";
import type { Stored } from "../mod.ts";
import { type Observed, statusFor } from "./ptemplate_status.ts";

const pt: Stored<Ptemplate, true> = {
  metadata: { name: "p", namespace: "n", uid: "pt-uid", generation: 3 },
  spec: { selector: { role: "worker" } },
};
const module = (loader?: [number, number, number], plugin?: [number, number, number]): Module => ({
  metadata: { name: "p" },
  spec: {} as Module["spec"],
  status: {
    moduleLoader: loader &&
      {
        nodesMatchingSelectorNumber: loader[0],
        desiredNumber: loader[1],
        availableNumber: loader[2],
      },
    devicePlugin: plugin &&
      {
        nodesMatchingSelectorNumber: plugin[0],
        desiredNumber: plugin[1],
        availableNumber: plugin[2],
      },
  },
});
const ds = (desired: number, ready: number, updated = ready): DaemonSet => ({
  metadata: { name: "p-consumer", generation: 1 },
  status: {
    observedGeneration: 1,
    desiredNumberScheduled: desired,
    numberReady: ready,
    updatedNumberScheduled: updated,
    currentNumberScheduled: desired,
    numberMisscheduled: 0,
  },
});
const pods = (...names: string[]) =>
  names.map((name) => ({ metadata: { name, namespace: "n", uid: `uid-${name}` } }));
const condition = (observed: Observed, type: string) =>
  statusFor(pt, observed).conditions!.find((c) => c.type === type)!;

Deno.test("status: all parts ready → Ready; consumers sorted; counters copied", () => {
  const status = statusFor(pt, {
    kmmInstalled: true,
    module: module([2, 2, 2], [2, 2, 2]),
    daemonSet: ds(2, 2),
    pods: pods("p-consumer-b", "p-consumer-a"),
  });
  expect(status.consumers).toEqual(["p-consumer-a", "p-consumer-b"]);
  expect(status.readyConsumers).toBe(2);
  expect(status.moduleLoader).toEqual({ nodesMatchingSelector: 2, desired: 2, available: 2 });
  expect(status.conditions!.map((c) => [c.type, c.status, c.reason])).toEqual([
    ["Ready", "True", "Ready"],
    ["KernelModuleLoaded", "True", "Available"],
    ["DevicePluginAvailable", "True", "Available"],
    ["ConsumersReady", "True", "AllReady"],
  ]);
  expect(status.conditions!.every((c) => c.observedGeneration === 3)).toBe(true);
});

Deno.test("status: KMM missing says so, and the consumers still report", () => {
  const observed = { kmmInstalled: false, daemonSet: ds(1, 1), pods: pods("x") };
  expect(condition(observed, "Ready")).toMatchObject({
    status: "False",
    reason: "KMMNotInstalled",
    message: expect.stringContaining("install Kernel Module Management"),
  });
  expect(condition(observed, "ConsumersReady").status).toBe("True");
  expect(statusFor(pt, observed).consumers).toEqual(["x"]);
});

Deno.test("status: the reasons a person can act on", () => {
  expect(condition({ kmmInstalled: true, pods: [] }, "KernelModuleLoaded").reason).toBe(
    "ModulePending",
  );
  expect(condition({ kmmInstalled: true, module: module(), pods: [] }, "KernelModuleLoaded").reason)
    .toBe("WaitingForKMM");
  expect(
    condition({ kmmInstalled: true, module: module([0, 0, 0]), pods: [] }, "KernelModuleLoaded"),
  )
    .toMatchObject({
      status: "False",
      reason: "NoMatchingNodes",
      message: expect.stringContaining("role=worker"),
    });
  expect(
    condition({ kmmInstalled: true, module: module([3, 3, 1]), pods: [] }, "KernelModuleLoaded"),
  )
    .toMatchObject({
      status: "False",
      reason: "Progressing",
      message: "kernel module ready on 1 of 3 nodes",
    });
  expect(condition({ kmmInstalled: true, daemonSet: ds(3, 1), pods: [] }, "ConsumersReady"))
    .toMatchObject({
      status: "False",
      reason: "RollingOut",
      message: "1 of 3 consumer pods ready, 1 up to date",
    });
  expect(condition({ kmmInstalled: true, daemonSet: ds(0, 0), pods: [] }, "ConsumersReady").reason)
    .toBe("NoMatchingNodes");
  expect(condition({ kmmInstalled: true, module: module([3, 3, 1]), pods: [] }, "Ready").message)
    .toBe("KernelModuleLoaded: kernel module ready on 1 of 3 nodes");
});

Deno.test("status: unchanged conditions keep their transition time, so nothing is rewritten", () => {
  const observed = {
    kmmInstalled: true,
    module: module([1, 1, 1], [1, 1, 1]),
    daemonSet: ds(1, 1),
    pods: pods("a"),
  };
  const first = statusFor(pt, observed, new Date("2026-01-01T00:00:00Z"));
  const again = statusFor({ ...pt, status: first }, observed, new Date("2026-01-02T00:00:00Z"));
  expect(again).toEqual(first);
  const changed = statusFor(
    { ...pt, status: first },
    { ...observed, daemonSet: ds(1, 0) },
    new Date("2026-01-03T00:00:00Z"),
  );
  expect(changed.conditions!.find((c) => c.type === "ConsumersReady")!.lastTransitionTime).toBe(
    "2026-01-03T00:00:00Z",
  );
  expect(changed.conditions!.find((c) => c.type === "KernelModuleLoaded")!.lastTransitionTime).toBe(
    "2026-01-01T00:00:00Z",
  );
});

Deno.test("status: a KMM pod that cannot pull its image is named, before waiting for KMM", () => {
  const kmmPod = (role: string, reason: string) => ({
    metadata: {
      name: `p-${role}-x`,
      namespace: "n",
      labels: { "kmm.node.kubernetes.io/module.name": "p", "kmm.node.kubernetes.io/role": role },
    },
    spec: { containers: [{ name: role, image: "quay.io/a/plugin:gone" }] },
    status: {
      containerStatuses: [{
        name: role,
        image: "",
        imageID: "",
        ready: false,
        restartCount: 0,
        state: { waiting: { reason, message: "manifest unknown" } },
      }],
    },
  });
  const observed: Observed = {
    kmmInstalled: true,
    module: module(),
    pods: [],
    kmmPods: [kmmPod("device-plugin", "ErrImagePull")],
  };
  expect(condition(observed, "DevicePluginAvailable")).toMatchObject({
    status: "False",
    reason: "DevicePluginImageFailed",
    message: "KMM's device-plugin pod p-device-plugin-x cannot pull image quay.io/a/plugin:gone " +
      "(ErrImagePull: manifest unknown): check that spec.deviceplugin names an image and tag " +
      "that exist, and for a private registry that spec.imageRepoSecret names a pull secret " +
      "with access to it (kubectl describe pod p-device-plugin-x -n n)",
  });
  // Ready names it rather than "WaitingForKMM" for the kernel module, which is only waiting.
  expect(condition(observed, "KernelModuleLoaded").reason).toBe("WaitingForKMM");
  expect(condition(observed, "Ready").reason).toBe("DevicePluginImageFailed");
  expect(
    condition({ ...observed, kmmPods: [kmmPod("module-loader", "ImagePullBackOff")] }, "Ready")
      .reason,
  ).toBe("KernelModuleImageFailed");
});

Deno.test("status: with no node to match, the status before the DaemonSet controller looks is the one after", () => {
  const unobserved: DaemonSet = { metadata: { name: "p-consumer", generation: 1 } };
  const before = {
    kmmInstalled: true,
    module: module(),
    daemonSet: unobserved,
    pods: [],
    nodes: [],
  };
  const after = { ...before, daemonSet: ds(0, 0) };
  const at = new Date("2026-01-01T00:00:00Z");
  const first = statusFor(pt, before, at);
  expect(first.conditions!.find((c) => c.type === "ConsumersReady")).toMatchObject({
    status: "False",
    reason: "NoMatchingNodes",
    message: expect.stringContaining("role=worker"),
  });
  // The DaemonSet controller's word changes nothing: no second write.
  expect(statusFor({ ...pt, status: first }, after, new Date("2026-01-01T00:01:00Z")))
    .toEqual(first);
  // Without a view of the nodes (a namespaced install), it still waits for the controller.
  expect(condition({ ...before, nodes: undefined }, "ConsumersReady").reason).toBe("RollingOut");
});
