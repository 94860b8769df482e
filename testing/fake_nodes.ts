/** The Nodes tests fake with kwok: workers with the labels the samples select, and devices. */
import type { KubeClient } from "../kube/client.ts";
import { NODE } from "../kube/kinds.ts";

/** A Node to fake with kwok. */
export interface FakeNode {
  /** The Node's name. */
  name: string;
  /** Its labels, for plugins' node selectors to match. */
  labels?: Record<string, string>;
}

/** Nodes with this annotation are the ones our kwok manages. */
export const KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node";

/** The label examples/seed.yaml selects: what `deno task dev` and `cluster --nodes` give nodes. */
export const WORKER_LABELS: Readonly<Record<string, string>> = {
  "node-role.kubernetes.io/worker": "worker",
};

/** `worker-1` … `worker-<count>`, labelled as workers, for `createNodes`. */
export function workerNodes(count: number): FakeNode[] {
  return Array.from({ length: count }, (_, i) => ({
    name: `worker-${i + 1}`,
    labels: { ...WORKER_LABELS },
  }));
}

/**
 * Creates Nodes that kwok manages (it marks them Ready), with the given labels, schedulable at
 * once and advertising 64 `example.com/ptemplate` devices (what KMM's device plugin would).
 */
export async function createFakeNodes(client: KubeClient, nodes: FakeNode[]): Promise<void> {
  for (const node of nodes) {
    await client.create(NODE, {
      metadata: {
        name: node.name,
        labels: {
          "kubernetes.io/hostname": node.name,
          "kubernetes.io/os": "linux",
          "kubernetes.io/arch": "amd64",
          type: "kwok",
          ...node.labels,
        },
        annotations: { [KWOK_NODE_ANNOTATION]: "fake", "node.alpha.kubernetes.io/ttl": "0" },
      },
      spec: {},
      status: {
        allocatable: { cpu: "32", memory: "256Gi", pods: "110", "example.com/ptemplate": "64" },
        capacity: { cpu: "32", memory: "256Gi", pods: "110", "example.com/ptemplate": "64" },
      },
    });
    // The API server taints new Nodes not-ready; the node-lifecycle controller lifts that
    // once they report Ready. kwok reports Ready at once, and we run no lifecycle controller
    // (it would also want heartbeats), so lift it here.
    await client.patch(NODE, node.name, { spec: { taints: null } });
    // Node status is ignored on create; capacity must be written to the status subresource.
    await client.patch(NODE, node.name, {
      status: {
        allocatable: { cpu: "32", memory: "256Gi", pods: "110", "example.com/ptemplate": "64" },
        capacity: { cpu: "32", memory: "256Gi", pods: "110", "example.com/ptemplate": "64" },
      },
    }, { subresource: "status" });
  }
}
