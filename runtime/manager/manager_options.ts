/** What a manager is given (and refuses at once when it can never run), and where it listens. */
import type { KubeClient } from "../../kube/client.ts";
import type { ConnectionCheckOptions } from "../../kube/connection_health.ts";
import type { Unstructured } from "../../kube/object.ts";
import type { Resource } from "../../kube/resource.ts";
import type { OperatorIdentity } from "../identity/mod.ts";
import { fieldManagerOf } from "../identity/mod.ts";
import type { PluginRunner } from "../isolation/mod.ts";
import type { BindAddress, Logger, Registry, ServerLimits } from "../observe/mod.ts";
import { MAX_CONCURRENCY, type Plugin } from "../plugin/mod.ts";
import type { DryRunReport, WriteLoopGuardOptions } from "../reconcile/mod.ts";
import type { Conversion, ServingCertificate } from "../webhooks/mod.ts";

/** What a manager runs, where it serves, and how it behaves on a bad day. */
export interface ManagerOptions {
  /** The client of the cluster (its rate limit is every reconcile's). */
  client: KubeClient;
  /** The plugins to run; names must be unique. */
  plugins: Plugin[];
  /**
   * Whose runtime this is (see `defineOperator`): the names it gives itself in the cluster (field
   * managers, its labels, annotations and default finalizers on objects, the Event component,
   * the default Lease). Default ours, PTEMPLATE_OPERATOR. Two operators in one cluster need two
   * identities, or they write each other's children and share a Lease; changing it for a
   * running operator makes its children look like someone else's (rewritten once each).
   */
  operator?: OperatorIdentity;
  /** Namespaces to watch; all when absent or empty. */
  namespaces?: string[];
  /**
   * With `namespaces`: kinds to watch once across all namespaces, keeping what is in them,
   * instead of once per namespace (see InformerPoolOptions.acrossNamespaces); the operator must
   * be allowed to list and watch such a kind cluster-wide. `run` picks them
   * (cli/watch_scope.ts). None by default.
   */
  acrossNamespaces?: (resource: Resource) => boolean;
  /**
   * Lease to lead on, or false to run controllers at once (one instance only!). With `shards`,
   * the ring's leases are named after it, in its namespace, with its identity and timings.
   */
  leaderElection?: false | {
    namespace: string;
    /** The Lease; default the operator's, `<name>.<domain>` (OperatorIdentity.leaseName). */
    name?: string;
    identity?: string;
    leaseDurationMs?: number;
    renewDeadlineMs?: number;
    retryPeriodMs?: number;
  };
  /**
   * Split every plugin's keys among the replicas instead of electing one leader: a ring of this
   * many shards (1 to 256) by a stable hash of the parent's uid, each shard a Lease
   * `<leaderElection.name>-shard-<i>` held like the leader's (runtime/shards/shard_ring.ts), the
   * replicas sharing them out evenly. Needs `leaderElection`. Each replica caches only its
   * shards' parents and children (kinds no plugin maps to a parent, such as Nodes, stay whole).
   * Every replica must be given the same number: one given another refuses to work (not ready)
   * until the ring's leases agree, so changing it means stopping every replica. More shards than
   * replicas lets a new replica take a share; each shard costs a lease renewal every retry
   * period, and a LIST+WATCH per split kind on the replica holding it.
   */
  shards?: number;
  /** Where to serve `/metrics`; undefined to not serve. `flag` names it in errors. */
  metricsBind?: BindAddress;
  /**
   * Serve `/metrics` over HTTPS, only to callers the API server says may `get` it (TokenReview
   * and SubjectAccessReview, cached, as controller-runtime's filter does; the operator needs to
   * `create` both, which `ptemplate-operator rbac` grants). The certificate comes from
   * `certificate` (asked again every few seconds), or is made at start and signed by itself.
   * Without this, plain HTTP to anyone who reaches the port: keep that to loopback.
   */
  secureMetrics?: {
    certificate?: () => Promise<ServingCertificate | undefined>;
    /** The ClusterRole a refused caller is told to be bound to (`rbac` prints it). */
    readerRole?: string;
  };
  /**
   * The ClusterRole that grants `get /metrics`, named in a refusal of `/debug/explain` when the
   * metrics are served in plain HTTP (with HTTPS, `secureMetrics.readerRole` says it).
   */
  metricsReaderRole?: string;
  /** How many recent visits each controller keeps for `explain`; default 1000. */
  visitHistory?: number;
  /**
   * Rehearse instead of act: every child write goes as a server-side dry run, no status, Event or
   * finalizer is written, no lease taken; what would change is told to this report. `firstPass`
   * says when every object has been looked at once.
   */
  dryRun?: DryRunReport;
  /**
   * Edits before bulk work in every controller's queue (default true): a start's, a resync's or
   * a shard's backlog does not hold up a person's edit. False: one line, first come first served.
   */
  priorityQueue?: boolean;
  /** Where to serve `/healthz` and `/readyz` (plain HTTP, for the kubelet); undefined to not serve. */
  healthBind?: BindAddress;
  /** What a caller may cost each server (connections, bodies, requests); see ServerLimits. */
  serverLimits?: Partial<ServerLimits>;
  /**
   * The plugins' admission and the CRDs' conversion over HTTPS, on every replica (leader or
   * not); `/readyz` fails while they are not served. Undefined to serve none.
   */
  webhooks?: {
    bind: BindAddress;
    /** The serving certificate, asked again every few seconds (a rotation is taken at once). */
    certificate: () => Promise<ServingCertificate | undefined>;
    conversions?: Conversion[];
    /** CRDs whose version schemas admitted objects are checked against. */
    crds?: Unstructured[];
    reloadMs?: number;
    limits?: Partial<ServerLimits>;
  };
  /**
   * How long in-flight reconciles may run after SIGTERM before they are cancelled; default 30 s.
   * Keep it below the pod's terminationGracePeriodSeconds, or the kubelet kills us mid-write.
   */
  gracefulShutdownMs?: number;
  /**
   * Every object is reconciled again this often even if nothing changed; default 10 hours.
   * Shorter catches what watches missed sooner, at the cost of reconciles (not writes: a
   * converged object writes nothing).
   */
  resyncPeriodMs?: number;
  /** Watches silent this long are restarted; see InformerOptions. */
  watchSilenceTimeoutMs?: number;
  /**
   * How the connection to the API server is checked (see ConnectionCheckOptions: when a silent
   * connection is replaced). `/readyz` fails while requests get no answer; `/healthz` fails once
   * that has lasted `unhealthyAfterMs` (default 60 s), so the kubelet restarts a process that
   * cannot recover by itself. Longer rides out API server upgrades without restarts; shorter
   * restarts sooner when something local is stuck.
   */
  connection?: ConnectionCheckOptions & { unhealthyAfterMs?: number };
  /** When a child or status rewritten again and again counts as a loop; see WriteLoopGuard. */
  writeLoopGuard?: WriteLoopGuardOptions;
  /** Workers per plugin that does not set its own `concurrency`; default 1. */
  concurrency?: number;
  /**
   * A plugin's read of a field it did not declare (`reads`) throws, naming it, instead of
   * reading `undefined` from a cache that did not keep it: for tests (`runManager` turns it on).
   */
  strictReads?: boolean;
  /**
   * @internal Where each plugin's code runs (runtime/isolation/): by default in this isolate;
   * the CLI's `--plugin-isolation` sets it. Runners are closed when `run` returns.
   */
  runnerFor?: (plugin: Plugin, metrics: Registry) => PluginRunner | undefined;
  /**
   * The deadline of a reconcile of a plugin that sets no `reconcileTimeoutMs`; default 60 s.
   * Past it the visit's writes are refused, its worker slot freed, the key retried with backoff
   * (quarantined after three in a row). Too short abandons reconciles that are merely slow.
   */
  reconcileTimeoutMs?: number;
  /** Where metrics go; default a new one (served at `/metrics`). */
  registry?: Registry;
  /** The manager's own logger; default category `manager`. */
  log?: Logger;
  /**
   * Told when this instance starts leading (before any reconcile) and when it has stopped
   * (after every reconcile ended): for tests and status pages.
   */
  onLeaderChange?: (leading: boolean) => void;
}

/** Addresses actually bound, once running. */
export interface ManagerEndpoints {
  /** The port `/metrics` is served on. */
  metricsPort?: number;
  /** The port `/healthz` and `/readyz` are served on. */
  healthPort?: number;
  /** The port the webhooks are served on. */
  webhookPort?: number;
}

/**
 * Throws for options that can never run, naming what to change: a concurrency out of range, two
 * plugins of one name, a field manager the API server would refuse on every write, shards without
 * leader election, a dry run that would take a lease or serve webhooks.
 */
export function checkManagerOptions(options: ManagerOptions, operator: OperatorIdentity): void {
  const concurrency = options.concurrency ?? 1;
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > MAX_CONCURRENCY) {
    throw new RangeError(
      `concurrency must be a whole number from 1 to ${MAX_CONCURRENCY}, not ${concurrency}`,
    );
  }
  const names = new Set<string>();
  for (const plugin of options.plugins) {
    if (names.has(plugin.name)) throw new TypeError(`two plugins are named "${plugin.name}"`);
    names.add(plugin.name);
    const manager = fieldManagerOf(operator, plugin.name);
    // The API server refuses longer field managers, on every write.
    if (manager.length > 128) {
      throw new TypeError(
        `plugin ${plugin.name}: its field manager "${manager}" is longer than the API server's ` +
          "128 characters; shorten the plugin's or the operator's name",
      );
    }
  }
  const { leaderElection, shards, dryRun } = options;
  if (shards !== undefined && !leaderElection) {
    throw new TypeError("shards need leaderElection: its namespace, name and identity");
  }
  if (dryRun && (leaderElection || options.webhooks)) {
    throw new TypeError("a dry run takes no lease and serves no webhooks: leave them out");
  }
}
