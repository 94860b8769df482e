/** The `memcached` plugin: a Memcached's `spec.size` becomes a Deployment's replicas; `status.nodes` its pods. */
import type { Deployment } from "kubernetes-types/apps/v1.d.ts";
import { definePlugin, DEPLOYMENT, POD, reads, type Stored, watch } from "../../mod.ts";
import { MEMCACHED, type Memcached } from "./crd.ts";

export const MEMCACHED_IMAGE = "memcached:1.4.36-alpine";

/** The labels of a Memcached's Deployment and pods, as the operator-sdk tutorial has them. */
export function labelsFor(memcached: Stored<Memcached, true>): Record<string, string> {
  return { app: "memcached", memcached_cr: memcached.metadata.name };
}

export function deploymentFor(memcached: Stored<Memcached, true>): Deployment {
  const labels = labelsFor(memcached);
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: memcached.metadata.name, namespace: memcached.metadata.namespace, labels },
    spec: {
      replicas: memcached.spec.size,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          containers: [{
            name: "memcached",
            image: MEMCACHED_IMAGE,
            command: ["memcached", "-m=64", "-o", "modern", "-v"],
            ports: [{ containerPort: 11211, name: "memcached" }],
          }],
        },
      },
    },
  };
}

export const memcachedPlugin = definePlugin({
  name: "memcached",
  for: MEMCACHED,
  owns: [DEPLOYMENT],
  // Of Pods only their names and labels are read: their cache holds metadata alone (the API
  // server sends no more), whatever else runs in the cluster.
  reads: [reads(MEMCACHED, ["spec"]), reads(DEPLOYMENT, []), reads(POD, [])],
  // Pods are not ours (the Deployment's ReplicaSet makes them); watch them for the status.
  watches: [watch(POD, {
    map: (pod) => {
      const labels = pod.metadata.labels ?? {};
      return labels.app === "memcached" && labels.memcached_cr
        ? [{ namespace: pod.metadata.namespace, name: labels.memcached_cr }]
        : [];
    },
  })],
  reconcile(memcached, { cache }) {
    const pods = cache(POD).list({
      namespace: memcached.metadata.namespace,
      labelSelector: `app=memcached,memcached_cr=${memcached.metadata.name}`,
    }).filter((pod) => !pod.metadata.deletionTimestamp);
    return {
      children: [deploymentFor(memcached)],
      status: { nodes: pods.map((pod) => pod.metadata.name).sort() },
    };
  },
});
