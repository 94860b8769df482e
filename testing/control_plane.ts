/**
 * A real Kubernetes control plane for tests (our envtest): etcd and kube-apiserver with RBAC on,
 * and on request kube-controller-manager, kube-scheduler and kwok, all on loopback.
 */
import { assetPath } from "./asset.ts";
import { parseAllDocuments } from "yaml";
import type { ClusterConfig } from "../kube/cluster_config.ts";
import { KubeClient } from "../kube/client.ts";
import type { KubeObject, Unstructured } from "../kube/object.ts";
import { CUSTOM_RESOURCE_DEFINITION, NAMESPACE } from "../kube/kinds.ts";
import { policyResource } from "../kube/empty_value_policy.ts";
import { kubeconfigYaml } from "../kube/kubeconfig_yaml.ts";
import { type Binaries, findBinaries } from "./binaries.ts";
import { createControlPlanePki } from "./control_plane_pki.ts";
import { ManagedProcess } from "./process.ts";
import { freePorts } from "./ports.ts";
import { forgetRun, ownStartTime, recordRun, sweepOrphans } from "./run_registry.ts";
import { type AuditEvent, readAuditLog } from "./audit_log.ts";
import { createFakeNodes, type FakeNode, KWOK_NODE_ANNOTATION } from "./fake_nodes.ts";
import {
  mintServiceAccountIdentity,
  type ServiceAccountIdentity,
} from "./service_account_identity.ts";
import { stoppedOnItsOwn, stopWithProcess } from "./stop_with_process.ts";

/** What to start besides etcd and kube-apiserver. */
export interface ControlPlaneOptions {
  /**
   * kube-controller-manager with these controllers (garbage collection, DaemonSets, Deployments,
   * namespaces by default). It learns new API kinds only every 30 s, so pass CRDs in `crds`
   * (installed before it starts) when its garbage collector must see them.
   */
  controllerManager?: boolean | { controllers: string[] };
  /** kube-scheduler: DaemonSet and Deployment pods are bound by it. */
  scheduler?: boolean;
  /** kwok with kwok's "fast" stages: Nodes you create with `createNodes` become Ready, bound pods Running. */
  kwok?: boolean;
  /** CRDs (YAML files, multi-document, or objects) installed and Established before the controllers start. */
  crds?: (string | URL | Unstructured)[];
  /** Use these binaries instead of finding (or building) them. */
  binaries?: Binaries;
  /** Extra kube-apiserver flags, e.g. `--watch-cache=false`. */
  apiServerFlags?: string[];
  /**
   * kube-apiserver feature gates, e.g. `{ ShardedListAndWatch: true }` (KEP-5866, alpha and off
   * by default in 1.36: the API server then ignores shard selectors without a word).
   */
  featureGates?: Record<string, boolean>;
  /**
   * Stop on SIGINT/SIGTERM by itself (default true). A program that must stop other things
   * first (e.g. `deno task dev` drains the operator) passes false and calls `stop()` itself.
   */
  handleSignals?: boolean;
  /** Keep an audit log of every request (Metadata level), readable through `auditEvents()`. */
  audit?: boolean;
  /** Receives progress lines (binary builds, start-up); stderr by default. */
  progress?: (line: string) => void;
}

/**
 * The controllers kube-controller-manager runs when asked for without a list: garbage collection,
 * DaemonSets, Deployments (and their ReplicaSets), namespaces.
 */
export const DEFAULT_CONTROLLERS = [
  "garbage-collector-controller",
  "daemonset-controller",
  "deployment-controller",
  "replicaset-controller",
  "namespace-controller",
];

const STAGES = new URL("./assets/kwok_stages_fast.yaml", import.meta.url);
/** A running control plane. Always `stop()` it (or use `await using`). */
export class ControlPlane {
  /** Folder holding certificates, kubeconfigs, etcd data and component logs. */
  readonly dir: string;
  /** `https://127.0.0.1:<port>` */
  readonly server: string;
  /** The admin identity (client certificate in `system:masters`). */
  readonly adminConfig: ClusterConfig;
  /** A kubeconfig file for the admin identity: `kubectl --kubeconfig <this>`. */
  readonly adminKubeconfigPath: string;
  /** Where each binary it runs was found. */
  readonly binaries: Binaries;
  /** etcd's client URL on loopback (`http://127.0.0.1:<port>`): the API server's storage. */
  readonly etcdUrl: string;
  readonly #processes = new Map<string, ManagedProcess>();
  readonly #clients: KubeClient[] = [];
  readonly #apiServerArgs: string[];
  readonly #ownerStart: string;
  #stopping?: Promise<void>;

  private constructor(init: {
    dir: string;
    server: string;
    adminConfig: ClusterConfig;
    binaries: Binaries;
    etcdUrl: string;
    apiServerArgs: string[];
    ownerStart: string;
  }) {
    this.#ownerStart = init.ownerStart;
    this.dir = init.dir;
    this.server = init.server;
    this.adminConfig = init.adminConfig;
    this.adminKubeconfigPath = `${init.dir}/admin.kubeconfig`;
    this.binaries = init.binaries;
    this.etcdUrl = init.etcdUrl;
    this.#apiServerArgs = init.apiServerArgs;
  }

  /** Starts the control plane; on any failure stops what it started and keeps the logs. */
  static async start(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
    const progress = options.progress ?? ((line: string) => console.error(line));
    await sweepOrphans();
    const binaries = options.binaries ?? await findBinaries({ progress });
    const dir = await Deno.makeTempDir({ prefix: "ptemplate-cp-" });
    const pki = await createControlPlanePki();
    const files = {
      caCert: `${dir}/ca.crt`,
      servingCert: `${dir}/apiserver.crt`,
      servingKey: `${dir}/apiserver.key`,
      saKey: `${dir}/sa.key`,
      saPub: `${dir}/sa.pub`,
    };
    await Promise.all([
      Deno.writeTextFile(files.caCert, pki.ca.cert),
      Deno.writeTextFile(files.servingCert, pki.serving.cert),
      Deno.writeTextFile(files.servingKey, pki.serving.key, { mode: 0o600 }),
      Deno.writeTextFile(files.saKey, pki.serviceAccount.key, { mode: 0o600 }),
      Deno.writeTextFile(files.saPub, pki.serviceAccount.pub),
    ]);
    if (options.audit) {
      await Deno.writeTextFile(
        `${dir}/audit-policy.yaml`,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n  - level: Metadata\n",
      );
    }
    const [etcdPort, etcdPeerPort, apiPort] = freePorts(3);
    const etcdUrl = `http://127.0.0.1:${etcdPort}`;
    const server = `https://127.0.0.1:${apiPort}`;
    const apiServerArgs = [
      `--etcd-servers=${etcdUrl}`,
      "--bind-address=127.0.0.1",
      `--secure-port=${apiPort}`,
      "--advertise-address=127.0.0.1",
      "--endpoint-reconciler-type=none",
      `--tls-cert-file=${files.servingCert}`,
      `--tls-private-key-file=${files.servingKey}`,
      `--client-ca-file=${files.caCert}`,
      `--service-account-issuer=${server}/`,
      `--service-account-key-file=${files.saPub}`,
      `--service-account-signing-key-file=${files.saKey}`,
      "--service-cluster-ip-range=10.0.0.0/24",
      "--authorization-mode=RBAC",
      "--disable-admission-plugins=ServiceAccount",
      "--allow-privileged=true",
      ...(options.audit
        ? [
          `--audit-policy-file=${dir}/audit-policy.yaml`,
          `--audit-log-path=${dir}/audit.log`,
          "--audit-log-format=json",
          "--audit-log-mode=blocking",
        ]
        : []),
      ...(options.featureGates && Object.keys(options.featureGates).length
        ? [
          `--feature-gates=${
            Object.entries(options.featureGates).map(([gate, on]) => `${gate}=${on}`).join(",")
          }`,
        ]
        : []),
      ...(options.apiServerFlags ?? []),
    ];
    const plane = new ControlPlane({
      dir,
      server,
      binaries,
      etcdUrl,
      apiServerArgs,
      ownerStart: await ownStartTime(),
      adminConfig: {
        server,
        caData: pki.ca.cert,
        clientCertData: pki.admin.cert,
        clientKeyData: pki.admin.key,
        namespace: "default",
        source: `test control plane ${dir}`,
      },
    });
    stopWithProcess(plane, options.handleSignals ?? true);
    try {
      await Deno.writeTextFile(plane.adminKubeconfigPath, kubeconfigYaml(plane.adminConfig), {
        mode: 0o600,
      });
      plane.#spawn("etcd", binaries.etcd, [
        "--name=ptemplate-test",
        `--data-dir=${dir}/etcd`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
        `--initial-cluster=ptemplate-test=http://127.0.0.1:${etcdPeerPort}`,
        "--unsafe-no-fsync=true",
        "--log-level=warn",
      ]);
      await plane.#waitFor("etcd", async () => {
        const response = await fetch(`${etcdUrl}/health`);
        const body = await response.json();
        return body.health === "true";
      });
      await plane.#startApiServer();
      if (options.crds?.length) await plane.installCrds(...options.crds);
      const admin = ["--kubeconfig", plane.adminKubeconfigPath];
      if (options.controllerManager) {
        const controllers = options.controllerManager === true
          ? DEFAULT_CONTROLLERS
          : options.controllerManager.controllers;
        plane.#spawn("kube-controller-manager", binaries["kube-controller-manager"], [
          ...admin,
          `--controllers=${controllers.join(",")}`,
          "--leader-elect=false",
          "--secure-port=0",
          // Defaults wait 1–5 minutes before GC considers new kinds; tests cannot.
          "--concurrent-gc-syncs=5",
        ]);
      }
      if (options.scheduler) {
        plane.#spawn("kube-scheduler", binaries["kube-scheduler"], [
          ...admin,
          "--leader-elect=false",
          "--secure-port=0",
        ]);
      }
      if (options.kwok) {
        plane.#spawn("kwok", binaries.kwok, [
          ...admin,
          `--config=${await assetPath(STAGES, `${dir}/kwok_stages.yaml`)}`,
          "--manage-all-nodes=false",
          `--manage-nodes-with-annotation-selector=${KWOK_NODE_ANNOTATION}=fake`,
          "--server-address=",
        ]);
      }
      // Give components a moment to fail on bad flags, so the error is about them, not a later test.
      await new Promise((resolve) => setTimeout(resolve, 300));
      plane.#assertRunning();
      return plane;
    } catch (error) {
      await plane.stop({ keepLogs: true });
      throw new Error(`control plane failed to start (logs kept in ${dir}): ${error}`, {
        cause: error,
      });
    }
  }

  /** A new admin client; closed by `stop()`. */
  client(): KubeClient {
    return this.clientFor(this.adminConfig);
  }

  /** A new client for another identity; closed by `stop()`. */
  clientFor(config: ClusterConfig): KubeClient {
    const client = new KubeClient(config, { userAgent: "ptemplate-testing" });
    this.#clients.push(client);
    return client;
  }

  /** The component logs, by component name. */
  logFiles(): Record<string, string> {
    return Object.fromEntries([...this.#processes].map(([name, p]) => [name, p.logFile]));
  }

  /** PIDs (each a process-group leader) of every component started. */
  pids(): number[] {
    return [...this.#processes.values()].map((p) => p.pid);
  }

  /**
   * Creates (if needed) a ServiceAccount and mints a token for it: see
   * `mintServiceAccountIdentity`.
   */
  serviceAccountIdentity(
    namespace: string,
    name: string,
    options: { expirationSeconds?: number; pod?: string } = {},
  ): Promise<ServiceAccountIdentity> {
    return mintServiceAccountIdentity(this, namespace, name, options);
  }

  /** Creates Nodes that kwok manages: see `createFakeNodes`. */
  createNodes(...nodes: FakeNode[]): Promise<void> {
    return createFakeNodes(this.client(), nodes);
  }

  /**
   * Installs CRDs from YAML files or objects (server-side apply, which copes with KMM's 200 KB
   * CRD) and waits until each is `Established`. Returns the CRD names.
   */
  async installCrds(...sources: (string | URL | Unstructured)[]): Promise<string[]> {
    const client = this.client();
    const names: string[] = [];
    for (const source of sources) {
      const crds = typeof source === "string" || source instanceof URL
        ? parseAllDocuments(await Deno.readTextFile(source))
          .map((doc) => doc.toJS() as KubeObject | null)
          .filter((crd): crd is KubeObject => crd !== null)
        : [source];
      for (const crd of crds) {
        // A CRD's file may carry its admission policy (kube/empty_value_policy.ts).
        const policy = policyResource(crd);
        if (policy) {
          await client.apply(policy, crd, { fieldManager: "ptemplate-testing", force: true });
          continue;
        }
        if (crd.kind !== "CustomResourceDefinition") {
          throw new Error(`expected a CustomResourceDefinition, found ${crd.kind}`);
        }
        await client.apply(CUSTOM_RESOURCE_DEFINITION, crd, {
          fieldManager: "ptemplate-testing",
          force: true,
        });
        names.push(crd.metadata!.name!);
      }
    }
    for (const name of names) {
      await this.#waitFor(`CRD ${name} Established`, async () => {
        const crd = await client.get(CUSTOM_RESOURCE_DEFINITION, name);
        const status = crd.status as
          | { conditions?: { type: string; status: string }[] }
          | undefined;
        return status?.conditions?.some((c) => c.type === "Established" && c.status === "True") ??
          false;
      });
    }
    return names;
  }

  /**
   * Compacts etcd's history up to its current revision, so that watching from an older
   * resourceVersion fails with `410 Gone` (once the API server's watch cache no longer has it;
   * start with `apiServerFlags: ["--watch-cache=false"]` to get it at once).
   */
  async compactEtcd(): Promise<number> {
    const range = await fetch(`${this.etcdUrl}/v3/kv/range`, {
      method: "POST",
      body: JSON.stringify({ key: btoa("/"), limit: 1 }),
    });
    const revision = Number((await range.json()).header.revision);
    const compact = await fetch(`${this.etcdUrl}/v3/kv/compaction`, {
      method: "POST",
      body: JSON.stringify({ revision: String(revision), physical: true }),
    });
    if (!compact.ok) throw new Error(`etcd compaction failed: ${await compact.text()}`);
    await compact.body?.cancel();
    return revision;
  }

  /** The audit log so far (start with `audit: true`): who did what to which resource, with what result. */
  async auditEvents(): Promise<AuditEvent[]> {
    return await readAuditLog(this.dir);
  }

  /** Stops kube-apiserver and starts it again on the same port (watches break, etcd keeps state). */
  async restartApiServer(downMs = 0): Promise<void> {
    await this.#processes.get("kube-apiserver")?.stop();
    if (downMs) await new Promise((resolve) => setTimeout(resolve, downMs));
    await this.#startApiServer();
  }

  /**
   * Stops every component (SIGTERM, then SIGKILL to the process group) and closes clients.
   * Removes the folder unless `keepLogs`; a kept folder is printed so the logs can be read.
   * Calling it again returns the same stop, finished only when the first one is (the first
   * call's `keepLogs` holds): a second Ctrl-C must not end the process halfway.
   */
  stop(options: { keepLogs?: boolean } = {}): Promise<void> {
    this.#stopping ??= this.#stop(options);
    return this.#stopping;
  }

  async #stop(options: { keepLogs?: boolean }): Promise<void> {
    for (const client of this.#clients) client.close();
    // Stop dependents before what they depend on, so their logs hold no noise about it.
    const order = [...this.#processes.values()].reverse();
    for (const process of order) await process.stop();
    stoppedOnItsOwn(this);
    await forgetRun(this.dir);
    if (options.keepLogs) {
      console.error(`control plane logs kept in ${this.dir}`);
    } else {
      await Deno.remove(this.dir, { recursive: true }).catch(() => {});
    }
  }

  /** Stops it, for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /** Synchronous last resort for process exit: SIGKILL every group, no waiting. */
  killNow(): void {
    for (const process of this.#processes.values()) {
      try {
        Deno.kill(-process.pid, "SIGKILL");
      } catch {
        // gone already
      }
    }
  }

  async #startApiServer(): Promise<void> {
    this.#spawn("kube-apiserver", this.binaries["kube-apiserver"], this.#apiServerArgs);
    const client = this.client();
    await this.#waitFor("kube-apiserver", async () => {
      const ready = await client.request<string>("GET", "/readyz", { timeoutMs: 2_000 })
        .then(() => true, () => false);
      if (!ready) return false;
      // The bootstrap controllers create `default` last; RBAC roles exist by then.
      await client.get(NAMESPACE, "default", { timeoutMs: 2_000 });
      return true;
    }, 60_000);
  }

  #spawn(name: string, command: string, args: string[]): void {
    const process = ManagedProcess.start({
      name,
      command,
      args,
      logFile: `${this.dir}/${name}.log`,
    });
    this.#processes.set(name, process);
    recordRun(this.dir, this.#ownerStart, this.pids(), Object.values(this.binaries));
  }

  #assertRunning(): void {
    for (const process of this.#processes.values()) {
      if (process.status) {
        throw new Error(
          `${process.name} exited with code ${process.status.code}; see ${process.logFile}`,
        );
      }
    }
  }

  async #waitFor(what: string, ready: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last: unknown;
    while (Date.now() < deadline) {
      this.#assertRunning();
      try {
        if (await ready()) return;
      } catch (error) {
        last = error;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`${what} not ready after ${timeoutMs / 1000} s${last ? `: ${last}` : ""}`);
  }
}
