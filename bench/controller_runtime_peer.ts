/**
 * The peer bench:scale measures our operator against: a Ptemplate operator written the
 * kubebuilder way on controller-runtime v0.15 (`testing/toolchain/controller_runtime_peer`,
 * built from pinned Go modules and cached like the control plane). Each of its runs gets a fresh
 * control plane holding what ours met, and is measured as ours is: RSS against the empty
 * cluster, then from start to quiet over the Ptemplates, with its own ServiceAccount and RBAC.
 */
import { CONNECTION } from "../cli/flag_table.ts";
import { CLUSTER_ROLE, CLUSTER_ROLE_BINDING } from "../kube/kinds.ts";
import type { KubeClient } from "../kube/client.ts";
import { CONTROLLER_RUNTIME_PEER_VERSION, findBinaries } from "../testing/binaries.ts";
import { freePorts } from "../testing/ports.ts";
import { sleep } from "../util/sleep.ts";
import { cpuOf, rssSampler } from "./process_stats.ts";
import {
  measureReference,
  populate,
  type ReferenceFigures,
  type ScaleCluster,
  startPlane,
  waitForChildren,
  waitForQuiet,
} from "./scale_cluster.ts";
import { perPtemplate, type WriteFigures, writeFigures } from "./scale_figures.ts";

/** One way to run the peer: its client's rate limit and its workers. */
export interface PeerConfig {
  /** How the run is named in the table and the JSON. */
  name: string;
  qps: number;
  burst: number;
  /** controller-runtime's MaxConcurrentReconciles. */
  workers: number;
}

const VERSION = CONTROLLER_RUNTIME_PEER_VERSION.replace(/\.\d+$/, "");

/**
 * The peer's runs: with controller-runtime's client defaults (20 a second, burst 30), and with
 * the rate limit ours runs with (`--kube-api-qps`, `--kube-api-burst`); `workers` for both
 * (controller-runtime's default is 1).
 */
export function peerConfigs(workers = 1): PeerConfig[] {
  const qps = CONNECTION["kube-api-qps"].default;
  const burst = CONNECTION["kube-api-burst"].default;
  const of = workers === 1 ? "" : `, ${workers} workers`;
  return [
    { name: `controller-runtime ${VERSION} (defaults${of})`, qps: 20, burst: 30, workers },
    {
      name: `controller-runtime ${VERSION} (QPS ${qps}, burst ${burst}${of})`,
      qps,
      burst,
      workers,
    },
  ];
}

/** What one run of the peer measured. */
export interface PeerFigures extends WriteFigures {
  name: string;
  qps: number;
  burst: number;
  workers: number;
  emptyRssMiB: number;
  peakRssMiB: number;
  settledRssMiB: number;
  cpuSeconds: number;
  /** Until every child exists: the control plane's CPU and the peer's. */
  childrenCpu: { seconds: number; controlPlane: number; operator: number };
  perPtemplate: Record<string, number>;
  /** The raw client on the peer's control plane right after it: the hour's limit. */
  referenceSeconds: number;
  referenceCpu: ReferenceFigures;
  /** The children's time over the raw client's, in the same hour. */
  childrenRatio: number;
}

const NAMESPACE_NAME = "controller-runtime-peer-system";
const ACCOUNT = "controller-runtime-peer";
const USERNAME = `system:serviceaccount:${NAMESPACE_NAME}:${ACCOUNT}`;

/** The ClusterRole its kubebuilder markers ask for (controller.go). */
const RULES = [
  { apiGroups: ["pt.example.com"], resources: ["ptemplates"], verbs: ["get", "list", "watch"] },
  {
    apiGroups: ["pt.example.com"],
    resources: ["ptemplates/status"],
    verbs: ["get", "update", "patch"],
  },
  {
    apiGroups: ["kmm.sigs.x-k8s.io"],
    resources: ["modules"],
    verbs: ["get", "list", "watch", "create", "update"],
  },
  {
    apiGroups: ["apps"],
    resources: ["daemonsets"],
    verbs: ["get", "list", "watch", "create", "update"],
  },
  { apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch"] },
];

async function installRbac(admin: KubeClient): Promise<void> {
  await admin.create(CLUSTER_ROLE, { metadata: { name: ACCOUNT }, rules: RULES });
  await admin.create(CLUSTER_ROLE_BINDING, {
    metadata: { name: ACCOUNT },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: ACCOUNT },
    subjects: [{ kind: "ServiceAccount", name: ACCOUNT, namespace: NAMESPACE_NAME }],
  });
}

/** The peer's process: its stderr kept (zap's JSON lines and client-go's klog lines). */
class PeerProcess {
  readonly lines: string[] = [];
  readonly child: Deno.ChildProcess;
  readonly metricsPort: number;
  readonly spawned = Date.now();
  readonly #following: Promise<void>;

  constructor(binary: string, kubeconfig: string, config: PeerConfig) {
    [this.metricsPort] = freePorts(1);
    const child = new Deno.Command(binary, {
      args: [
        `--kubeconfig=${kubeconfig}`,
        `--metrics-bind-address=127.0.0.1:${this.metricsPort}`,
        "--health-probe-bind-address=0",
        `--kube-api-qps=${config.qps}`,
        `--kube-api-burst=${config.burst}`,
        `--max-concurrent-reconciles=${config.workers}`,
      ],
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    this.child = child;
    this.#following = (async () => {
      let buffered = "";
      for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
        buffered += chunk;
        const parts = buffered.split("\n");
        buffered = parts.pop()!;
        this.lines.push(...parts.filter((part) => part.trim()));
      }
    })();
  }

  /** Resolves once the controller's caches have synced and its workers run. */
  async synced(): Promise<void> {
    for (let i = 0; i < 1200; i++) {
      if (this.lines.some((l) => l.includes('"Starting workers"'))) return;
      if (await Promise.race([this.child.status.then(() => true), sleep(100).then(() => false)])) {
        break;
      }
    }
    throw new Error(`the peer never started its workers:\n${this.lines.slice(-20).join("\n")}`);
  }

  async metrics(): Promise<string> {
    return await (await fetch(`http://127.0.0.1:${this.metricsPort}/metrics`)).text();
  }

  async stop(): Promise<void> {
    try {
      this.child.kill("SIGTERM");
    } catch {
      // exited already
    }
    await this.child.status;
    await this.#following;
  }
}

/**
 * Runs the peer as `config` says on a fresh control plane holding `cluster`: first against the
 * empty cluster (its RSS after 5 s), then from start to quiet over the Ptemplates.
 */
export async function measurePeer(
  config: PeerConfig,
  cluster: ScaleCluster,
  progress: (line: string) => void,
): Promise<PeerFigures> {
  const { "controller-runtime-peer": binary } = await findBinaries({
    names: ["controller-runtime-peer"],
    progress,
  });
  const plane = await startPlane(cluster, progress);
  try {
    const admin = plane.client();
    const identity = await plane.serviceAccountIdentity(NAMESPACE_NAME, ACCOUNT);
    await installRbac(admin);
    let emptyRssMiB;
    {
      const peer = new PeerProcess(binary, identity.kubeconfigPath, config);
      const rss = rssSampler(peer.child.pid);
      await peer.synced();
      await sleep(5_000);
      emptyRssMiB = rss.last;
      await rss.stop();
      await peer.stop();
      progress(`${config.name}, empty cluster: ${emptyRssMiB.toFixed(1)} MiB`);
    }
    await populate(plane, cluster, progress);

    const planeBefore = await cpuOf(plane.pids());
    const peer = new PeerProcess(binary, identity.kubeconfigPath, config);
    const rss = rssSampler(peer.child.pid);
    await waitForChildren(admin, cluster.count);
    const childrenCpu = {
      seconds: (Date.now() - peer.spawned) / 1000,
      controlPlane: await cpuOf(plane.pids()) - planeBefore,
      operator: await cpuOf([peer.child.pid]),
    };
    progress(`${config.name}: children exist after ${childrenCpu.seconds.toFixed(1)} s`);
    await waitForQuiet(plane, USERNAME);
    const figures = {
      name: config.name,
      qps: config.qps,
      burst: config.burst,
      workers: config.workers,
      emptyRssMiB,
      peakRssMiB: rss.peak,
      settledRssMiB: rss.last,
      cpuSeconds: await cpuOf([peer.child.pid]),
      childrenCpu,
      perPtemplate: perPtemplate(await peer.metrics(), cluster.count),
    };
    await rss.stop();
    await peer.stop();
    const writes = writeFigures(await plane.auditEvents(), {
      username: USERNAME,
      since: peer.spawned,
      count: cluster.count,
    });
    const reference = await measureReference(plane, cluster);
    return {
      ...figures,
      ...writes,
      referenceSeconds: reference.seconds,
      referenceCpu: reference,
      childrenRatio: writes.childrenSeconds / reference.seconds,
    };
  } finally {
    await plane.stop();
  }
}
