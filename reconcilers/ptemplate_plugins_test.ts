/** The Ptemplate plugins run once against a given world, no cluster (testing/reconcile_once.ts). */
import { expect } from "expect";
import type { DaemonSet } from "kubernetes-types/apps/v1.d.ts";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { Module } from "../crds/kmm_module.ts";
import type { Ptemplate, PtemplateStatus } from "../crds/ptemplate.ts";
import { type KubeObject, reconcileOnce, type Stored } from "../mod.ts";
import {
  consumerDaemonSetPlugin,
  daemonSetFor,
  kmmModulePlugin,
  moduleFor,
  PTEMPLATE_UID_LABEL,
  statusAggregatorPlugin,
} from "./mod.ts";

const pt: Stored<Ptemplate, true> = {
  apiVersion: "pt.example.com/v1alpha1",
  kind: "Ptemplate",
  metadata: {
    name: "p",
    namespace: "n",
    uid: "pt-uid",
    generation: 2,
    // Long made: its first status is not held back for children on their way.
    creationTimestamp: "2026-01-01T00:00:00Z",
  },
  spec: { selector: { role: "worker" } },
};
const owner = {
  apiVersion: "pt.example.com/v1alpha1",
  kind: "Ptemplate",
  name: "p",
  uid: "pt-uid",
  controller: true,
};

Deno.test("kmm-module: the Module of the design, or nothing while KMM is not installed", async () => {
  const { outcome } = await reconcileOnce(kmmModulePlugin, pt);
  expect(outcome).toEqual({ children: [moduleFor(pt)] });
  const without = await reconcileOnce(kmmModulePlugin, pt, {
    installed: (r) => r.kind !== "Module",
  });
  expect(without.outcome).toEqual({});
});

Deno.test("consumer-daemonset: one DaemonSet selecting pods by the Ptemplate's UID", async () => {
  const { outcome } = await reconcileOnce(consumerDaemonSetPlugin, pt);
  expect(outcome.children).toEqual([daemonSetFor(pt)]);
  const ds = outcome.children![0] as DaemonSet;
  expect(ds.spec!.selector.matchLabels).toMatchObject({ [PTEMPLATE_UID_LABEL]: "pt-uid" });
});

Deno.test("status-aggregator: the status from the children in the cache, ours only", async () => {
  const module: Module & KubeObject = {
    ...moduleFor(pt),
    metadata: { name: "p", namespace: "n", uid: "m-uid", ownerReferences: [owner] },
    status: {
      moduleLoader: { nodesMatchingSelectorNumber: 2, desiredNumber: 2, availableNumber: 2 },
      devicePlugin: { nodesMatchingSelectorNumber: 2, desiredNumber: 2, availableNumber: 2 },
    },
  };
  const ds: DaemonSet & KubeObject = {
    ...daemonSetFor(pt),
    metadata: {
      name: "p-consumer",
      namespace: "n",
      uid: "ds-uid",
      generation: 1,
      ownerReferences: [owner],
    },
    status: {
      observedGeneration: 1,
      desiredNumberScheduled: 2,
      currentNumberScheduled: 2,
      numberReady: 2,
      updatedNumberScheduled: 2,
      numberMisscheduled: 0,
    },
  };
  const pod = (name: string, labels: Record<string, string>): Pod & KubeObject => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace: "n",
      labels,
      ownerReferences: [{
        apiVersion: "apps/v1",
        kind: "DaemonSet",
        name: "p-consumer",
        uid: "ds-uid",
        controller: true,
      }],
    },
    status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
  });
  const node = (name: string) => ({
    apiVersion: "v1",
    kind: "Node",
    metadata: { name, labels: { role: "worker" } },
    status: {
      conditions: [{ type: "Ready", status: "True" }],
      allocatable: { "example.com/ptemplate": "4" },
    },
  });
  const objects = [
    node("worker-1"),
    node("worker-2"),
    module,
    ds,
    pod("p-consumer-a", { [PTEMPLATE_UID_LABEL]: "pt-uid" }),
    pod("p-consumer-b", { [PTEMPLATE_UID_LABEL]: "pt-uid" }),
    // Not labelled as a consumer: outside the plugin's scoped Pod cache, so never counted.
    pod("stray", { app: "p" }),
  ];
  const { outcome } = await reconcileOnce(statusAggregatorPlugin, pt, { objects });
  const status = outcome.status as PtemplateStatus;
  // observedGeneration is the runtime's to add, not the plugin's.
  expect(status).toMatchObject({
    consumers: ["p-consumer-a", "p-consumer-b"],
    readyConsumers: 2,
    desiredConsumers: 2,
  });
  expect(status.conditions!.find((c) => c.type === "Ready")?.status).toBe("True");
});

Deno.test("status-aggregator: a Module someone else controls is reported, not counted", async () => {
  const foreign: Module & KubeObject = {
    ...moduleFor(pt),
    metadata: {
      name: "p",
      namespace: "n",
      ownerReferences: [{ ...owner, name: "other", uid: "other-uid" }],
    },
  };
  const { outcome } = await reconcileOnce(statusAggregatorPlugin, pt, { objects: [foreign] });
  const status = outcome.status as PtemplateStatus;
  expect(status.moduleLoader).toEqual({ nodesMatchingSelector: 0, desired: 0, available: 0 });
  expect(JSON.stringify(status.conditions)).toContain("ChildOwnedElsewhere");
});

Deno.test("reconcileOnce says so when a plugin calls the API server", async () => {
  const { definePlugin } = await import("../mod.ts");
  const calling = definePlugin({
    name: "calling",
    for: { group: "", version: "v1", kind: "ConfigMap", plural: "configmaps", namespaced: true },
    reconcile: async (_, { client }) => void await client.list({} as never),
  });
  await expect(reconcileOnce(calling, { metadata: { name: "c" } })).rejects.toThrow(
    /no API server \(the plugin called client\.list\)/,
  );
});
