/**
 * The shared event loop: starts the informers every plugin needs, waits for them to sync, runs the
 * controllers only while leader, serves metrics and probes, and shuts down gracefully.
 */
import { KubeClient } from "../kube/client.ts";
import type { KubeObject, Unstructured } from "../kube/object.ts";
import type { ConnectionCheckOptions } from "../kube/connection_health.ts";
import {
  AccessReviewer,
  type BindAddress,
  connectionChecks,
  type EventRecorder,
  exposeConnections,
  exposeProcessMetrics,
  exposeRequestCounts,
  HttpServer,
  type HttpServerOptions,
  KubeEventRecorder,
  log as rootLog,
  type Logger,
  metricsRoute,
  Probes,
  Registry,
  type Route,
  selfSignedCertificate,
  type ServerLimits,
} from "./observe/mod.ts";
import { explainRoute } from "./explain.ts";
import {
  cause,
  ChildProblems,
  Controller,
  controllerChecks,
  ControllerMetrics,
  controllerOf,
  type DryRunReport,
  WriteLoopGuard,
  type WriteLoopGuardOptions,
} from "./reconcile/mod.ts";
import { defaultIdentity, LeaderElector, leaderGauge, type StopReason } from "./leader/mod.ts";
import { InformerPool, type KindSharding, type Projection, resourceId } from "./cache/mod.ts";
import { shardNames, ShardRing } from "./shards/mod.ts";
import { bucketLabel, bucketOf } from "../kube/shard_range.ts";
import type { Resource } from "../kube/resource.ts";
import { StartupError } from "../util/startup_error.ts";
import { declaredReads, MAX_CONCURRENCY, ownedKinds, type Plugin } from "./plugin/mod.ts";
import type { PluginRunner } from "./isolation/mod.ts";
import { fieldManagerOf, type OperatorIdentity, PTEMPLATE_OPERATOR } from "./identity/mod.ts";
import { type Conversion, type ServingCertificate, WebhookServer } from "./webhooks/mod.ts";

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

/** The event loop of one operator process: caches, controllers while leading, servers. */
export class Manager {
  /** Every metric of this process (what `/metrics` serves). */
  readonly registry: Registry;
  /**
   * The webhook server, while running with `webhooks`.
   * @internal For tests and diagnostics; not part of the plugin API.
   */
  webhooks?: WebhookServer;
  /**
   * The shared informers.
   * @internal For tests and diagnostics; plugins read through `context.cache`.
   */
  readonly pool: InformerPool;
  /**
   * One controller per plugin.
   * @internal For tests and diagnostics; not part of the plugin API.
   */
  readonly controllers: Controller<KubeObject>[];
  readonly #options: ManagerOptions;
  /** Plugins whose code runs elsewhere than this isolate (a Worker), by name. */
  readonly #runners = new Map<string, PluginRunner>();
  /** Whose runtime this is (the option, or ours). */
  readonly operator: OperatorIdentity;
  readonly #log: Logger;
  readonly #events: KubeEventRecorder;
  readonly #elector?: LeaderElector;
  readonly #ring?: ShardRing;
  /** Where it listens, once running. */
  readonly endpoints: ManagerEndpoints = {};
  #running?: { stop: AbortController; abort: AbortController; done: Promise<void> };

  /** Checks the options and builds the controllers; nothing starts until `run`. */
  constructor(options: ManagerOptions) {
    this.#options = options;
    const operator = this.operator = options.operator ?? PTEMPLATE_OPERATOR;
    const ring = shardNames(operator.objectDomain);
    this.#log = options.log ?? rootLog("manager");
    this.registry = options.registry ?? new Registry();
    exposeRequestCounts(this.registry, options.client.requests);
    exposeConnections(this.registry, options.client.transport);
    exposeProcessMetrics(this.registry);
    const concurrency = options.concurrency ?? 1;
    if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > MAX_CONCURRENCY) {
      throw new RangeError(
        `concurrency must be a whole number from 1 to ${MAX_CONCURRENCY}, not ${concurrency}`,
      );
    }
    const names = new Set<string>();
    const managers = new Set<string>();
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
      managers.add(manager);
    }
    const { leaderElection, shards, dryRun } = options;
    if (shards !== undefined && !leaderElection) {
      throw new TypeError("shards need leaderElection: its namespace, name and identity");
    }
    if (dryRun && (leaderElection || options.webhooks)) {
      throw new TypeError("a dry run takes no lease and serves no webhooks: leave them out");
    }
    dryRun?.register(this.registry);
    this.pool = new InformerPool(options.client, {
      namespaces: options.namespaces,
      acrossNamespaces: options.acrossNamespaces,
      log: rootLog("informer"),
      silenceTimeoutMs: options.watchSilenceTimeoutMs,
      children: {
        resources: options.plugins.flatMap((p) => ownedKinds(p).map((o) => o.resource)),
        managers,
      },
      projection: projections(options.plugins),
      sharding: shards === undefined ? undefined : {
        count: shards,
        kind: kindSharding(options.plugins, ring.bucketLabel),
        serverSelects: () => this.#ring?.serverSelects ?? false,
      },
    });
    this.pool.exposeSizes(this.registry);
    if (leaderElection && shards !== undefined) {
      this.#ring = new ShardRing({
        client: options.client.urgent(),
        namespace: leaderElection.namespace,
        name: leaderElection.name ?? operator.leaseName,
        identity: leaderElection.identity ?? defaultIdentity(),
        count: shards,
        names: ring,
        leaseDurationMs: leaderElection.leaseDurationMs,
        renewDeadlineMs: leaderElection.renewDeadlineMs,
        retryPeriodMs: leaderElection.retryPeriodMs,
        drainMs: options.gracefulShutdownMs,
        work: {
          start: (shard) => this.#startShard(shard),
          stop: (shard) => this.#stopShard(shard),
        },
        log: rootLog("shards"),
        registry: this.registry,
      });
    } else if (options.leaderElection) {
      // Urgent: a renewal must not queue behind a backlog of writes and miss its deadline.
      this.#elector = new LeaderElector(options.client.urgent(), {
        ...options.leaderElection,
        name: options.leaderElection.name ?? operator.leaseName,
        identity: options.leaderElection.identity ?? defaultIdentity(),
        log: rootLog("leader-election"),
        gauge: leaderGauge(this.registry),
      });
    }
    // Everything that writes on the leader's behalf (children, status, Events, a plugin's own
    // requests) goes through the fence: nothing is sent once leadership could have been lost.
    // With a ring, each reconcile's writes pass its shard's fence (its claim), and Events, about
    // no one key, pass while any shard is held.
    const fence = this.#elector?.fence ?? this.#ring?.anyFence;
    // A dry run sends every write as a server-side dry run, and records no Event.
    const base = dryRun ? options.client.dryRun() : options.client;
    const client = fence ? base.fenced(fence) : base;
    const ringOf = this.#ring;
    this.#events = new KubeEventRecorder(client, {
      component: operator.name,
      log: rootLog("events"),
      share: ringOf && (() => ringOf.held.length / ringOf.count),
    });
    const events: EventRecorder = dryRun ? dryRunEvents(dryRun) : this.#events;
    const metrics = new ControllerMetrics(this.registry);
    const problems = new ChildProblems();
    const guard = new WriteLoopGuard(options.writeLoopGuard);
    for (const plugin of options.plugins) {
      const runner = options.runnerFor?.(plugin, this.registry);
      if (runner) this.#runners.set(plugin.name, runner);
    }
    this.controllers = options.plugins.map((plugin) =>
      // The informer hands each plugin objects of the kind it declared in `for`.
      new Controller(plugin, {
        operator,
        client: this.#ring ? options.client : client,
        claims: this.#ring,
        childLabels: this.#ring && ((parent) => ({
          [ring.bucketLabel]: bucketLabel(bucketOf(parent.metadata?.uid ?? "")),
        })),
        pool: this.pool,
        strictReads: options.strictReads,
        metrics,
        events,
        dryRun,
        log: rootLog("controller"),
        problems,
        guard,
        concurrency: options.concurrency,
        runner: this.#runners.get(plugin.name),
        reconcileTimeoutMs: options.reconcileTimeoutMs,
        visitHistory: options.visitHistory,
        priorityQueue: options.priorityQueue,
      })
    );
  }

  /** True while this instance runs the controllers. */
  get leading(): boolean {
    return this.#running !== undefined;
  }

  /**
   * Runs until `signal` aborts, then drains in-flight reconciles (up to the graceful period),
   * releases the lease and returns. Never throws for a plugin's failure.
   */
  async run(signal: AbortSignal): Promise<void> {
    const informers = new AbortController();
    const callers = this.#callerClients();
    const webhooks = this.#options.webhooks &&
      this.#webhookServer(this.#options.webhooks, callers.client);
    this.webhooks = webhooks;
    const servers: HttpServer[] = [];
    try {
      await this.#serve(this.#probes(webhooks), callers.client, servers);
      if (webhooks) await this.#listen("webhooks", webhooks, this.#options.webhooks!.bind);
      this.endpoints.webhookPort = webhooks?.port;
      const { connection } = this.#options;
      if (connection) this.#options.client.transport.health.configure(connection);
      this.pool.start(informers.signal);
      this.#log.info("waiting for {count} informer(s) to sync", { count: this.pool.all().length });
      await Promise.race([this.pool.synced(), abortPromise(signal)]);
      if (signal.aborted) return;
      this.#log.info("caches synced");
      if (this.#ring) await this.#serveShards(this.#ring, signal);
      else await this.#lead(signal);
    } finally {
      informers.abort();
      await this.pool.stopped();
      await withinMs(this.#events.close(), EVENTS_FLUSH_MS);
      await webhooks?.stop();
      await Promise.all(servers.map((s) => s.stop()));
      await Promise.all([...this.#runners.values()].map((runner) => runner.close()));
      callers.close();
      this.#log.info("stopped");
    }
  }

  /**
   * The probes, each component bringing its own checks: `/healthz` asks that the process lives,
   * reaches the API server (within `connection.unhealthyAfterMs`) and runs its controllers;
   * `/readyz` that the API server answers, the webhooks are served, and the caches have synced.
   */
  #probes(webhooks: WebhookServer | undefined): Probes {
    const probes = new Probes();
    probes.register({ healthz: { ping: () => undefined } });
    probes.register(connectionChecks(
      this.#options.client.transport.health,
      this.#options.connection?.unhealthyAfterMs ?? 60_000,
    ));
    probes.register(controllerChecks(this.controllers, () => this.leading));
    if (webhooks) probes.register(webhooks.checks());
    probes.register(this.pool.checks());
    if (this.#ring) probes.register(this.#ring.checks((shard) => this.pool.shardFresh(shard)));
    return probes;
  }

  /**
   * Clients of their own for what callers cause (reviews, admission reads), apart from the
   * reconcilers' rate limit; closed when the manager stops.
   */
  #callerClients(): {
    client: (purpose: string, rateLimit?: { qps: number; burst: number }) => KubeClient;
    close: () => void;
  } {
    const clients: KubeClient[] = [];
    return {
      client: (purpose, rateLimit) => {
        const client = new KubeClient(this.#options.client.transport.config, {
          userAgent: `${this.operator.name}/${purpose}`,
          rateLimit,
          maxRetries: 0,
        });
        clients.push(client);
        return client;
      },
      close: () => clients.forEach((client) => client.close()),
    };
  }

  /**
   * Starts a server and says where it listens, and, when it cannot serve yet (an HTTPS server
   * whose certificate is still to come), why not.
   */
  async #listen(
    what: string,
    server: { start(): Promise<void>; port?: number; problem?: string },
    bind: BindAddress,
    https?: boolean,
  ): Promise<void> {
    await server.start();
    const { problem } = server;
    this.#log.info(
      problem
        ? "listening for {what} on {address}, not serving yet: {problem}"
        : "serving {what} on {address}",
      {
        what,
        address: `${bind.hostname}:${server.port}`,
        port: server.port,
        ...(https === undefined ? {} : { https }),
        ...(problem ? { problem } : {}),
      },
    );
  }

  /**
   * Starts the metrics and probe servers: one for both when they share a plain-HTTP port, else
   * one each. Metrics over HTTPS cannot share the probes' port (the kubelet probes in plain HTTP).
   */
  async #serve(
    probes: Probes,
    callerClient: (purpose: string) => KubeClient,
    servers: HttpServer[],
  ): Promise<void> {
    const { metricsBind, healthBind, secureMetrics, serverLimits } = this.#options;
    const common = { limits: serverLimits, registry: this.registry };
    const server = (
      name: string,
      bind: BindAddress,
      routes: Route[],
      tls?: HttpServerOptions["tls"],
    ) => new HttpServer({ name, bind, routes, tls, ...common, log: rootLog(name) });
    const shared = metricsBind && healthBind && metricsBind.port !== 0 &&
      metricsBind.port === healthBind.port;
    if (shared && secureMetrics) {
      throw new StartupError(
        `${metricsBind.flag ?? "the metrics address"} and ${
          healthBind.flag ?? "the probes address"
        } are the same port, but metrics are served over HTTPS and probes over HTTP: give ` +
          "them different ports",
      );
    }
    if (metricsBind) {
      // Whoever may read /metrics may ask for a timeline: over HTTPS, and on loopback too.
      const reviewer = new AccessReviewer(callerClient("metrics-auth"), {
        log: rootLog("metrics"),
      });
      const readerRole = secureMetrics?.readerRole ?? this.#options.metricsReaderRole;
      const routes = [
        metricsRoute(this.registry, secureMetrics ? reviewer : undefined, { readerRole }),
        explainRoute(this.controllers, reviewer, { readerRole }),
        ...shared ? probes.routes() : [],
      ];
      const tls = secureMetrics && {
        certificate: secureMetrics.certificate ??
          selfSignedCertificate({
            dns: [hostnameOr("localhost"), "localhost"],
            ips: ["127.0.0.1"],
          }),
      };
      const http = server("metrics", metricsBind, routes, tls || undefined);
      servers.push(http);
      // Over HTTPS, not ready while its certificate is not at hand (a mount may bring it later).
      if (tls) probes.register({ readyz: { metrics: () => http.problem } });
      await this.#listen("metrics", http, metricsBind, Boolean(secureMetrics));
      this.endpoints.metricsPort = http.port;
      if (shared) {
        this.endpoints.healthPort = http.port;
        this.#log.info("serving {what} on {address}", {
          what: "probes",
          address: `${healthBind.hostname}:${http.port}`,
          port: http.port,
        });
      }
    }
    if (healthBind && !shared) {
      const http = server("probes", healthBind, probes.routes());
      servers.push(http);
      await this.#listen("probes", http, healthBind);
      this.endpoints.healthPort = http.port;
    }
  }

  /**
   * Resolves once every controller has visited every object it had when it started (a dry run's
   * one pass); the controllers must be running.
   */
  firstPass(): Promise<void> {
    return Promise.all(this.controllers.map((c) => c.firstPass)).then(() => undefined);
  }

  /** Runs the controllers while this instance leads (at once, without leader election). */
  async #lead(signal: AbortSignal): Promise<void> {
    const resync = setInterval(
      () => this.controllers.forEach((c) => c.enqueueAll(cause("resync"))),
      this.#options.resyncPeriodMs ?? 10 * 3600_000,
    );
    try {
      if (this.#elector) {
        await this.#elector.run(signal, {
          onStartedLeading: () => this.#startControllers(),
          onStoppedLeading: (reason) => this.#stopControllers(reason),
        });
      } else {
        this.#startControllers();
        await abortPromise(signal);
        await this.#stopControllers("shutdown");
      }
    } finally {
      clearInterval(resync);
    }
  }

  /**
   * Runs the controllers for the keys of the shards this replica holds, from now until the ring
   * has handed every shard over (drained) after `signal`.
   */
  async #serveShards(ring: ShardRing, signal: AbortSignal): Promise<void> {
    const resync = setInterval(
      () => this.controllers.forEach((c) => c.enqueueAll(cause("resync"))),
      this.#options.resyncPeriodMs ?? 10 * 3600_000,
    );
    this.#startControllers();
    try {
      await ring.run(signal);
    } finally {
      clearInterval(resync);
      await this.#stopControllers("shutdown");
    }
  }

  /** A shard was taken: its caches list, and once they have, its keys are all visited. */
  #startShard(shard: number): void {
    this.pool.startShard(shard);
    const parts = this.pool.all().filter((informer) => informer.shard === shard);
    Promise.all(parts.map((informer) => informer.whenFresh())).then(() => {
      if (this.pool.heldShards.includes(shard)) {
        for (const controller of this.controllers) controller.enqueueAll(cause("shard"));
      }
    });
  }

  /** A shard is handed on, its reconciles drained: their Events go out, then its caches. */
  async #stopShard(shard: number): Promise<void> {
    await withinMs(this.#events.flush(), EVENTS_FLUSH_MS);
    await this.pool.stopShard(shard);
  }

  /** The webhook server: admission reads the caches, and asks with clients of its own. */
  #webhookServer(
    webhooks: NonNullable<ManagerOptions["webhooks"]>,
    callerClient: (purpose: string, rateLimit?: { qps: number; burst: number }) => KubeClient,
  ): WebhookServer {
    // Reads only, and not through the fence: every replica answers the API server.
    const client = callerClient("admission", ADMISSION_RATE_LIMIT);
    return new WebhookServer({
      ...webhooks,
      plugins: this.#options.plugins.map((p) => this.#runners.get(p.name)?.admission ?? p),
      registry: this.registry,
      context: {
        client,
        cache: (resource) => this.pool.cache(resource),
        installed: (resource) => this.pool.informers(resource).every((i) => i.installed),
        reviewer: new AccessReviewer(client, {
          budget: ADMISSION_RATE_LIMIT,
          log: rootLog("webhooks"),
        }),
        log: rootLog("webhooks"),
      },
      log: rootLog("webhooks"),
    });
  }

  #startControllers(): void {
    const stop = new AbortController();
    const abort = new AbortController();
    const done = Promise.all(
      this.controllers.map((controller) =>
        controller.run(stop.signal, abort.signal).catch((error) => {
          // A controller's own machinery failing must not take the others down.
          this.#log.error("controller {controller} stopped with an error: {error}", {
            controller: controller.name,
            error,
          });
        })
      ),
    ).then(() => {});
    this.#running = { stop, abort, done };
    this.#options.onLeaderChange?.(true);
  }

  async #stopControllers(reason: StopReason): Promise<void> {
    const running = this.#running;
    if (!running) return;
    running.stop.abort();
    if (reason === "lost") {
      // Writes are refused already; what has not been written is not ours to write any more.
      running.abort.abort();
      this.#events.discard();
    } else {
      const grace = this.#options.gracefulShutdownMs ?? 30_000;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timedOut = await Promise.race([
        running.done.then(() => false),
        new Promise<boolean>((resolve) => timer = setTimeout(() => resolve(true), grace)),
      ]);
      clearTimeout(timer);
      if (timedOut) {
        this.#log.warn("in-flight reconciles did not finish within {seconds} s; cancelling them", {
          seconds: grace / 1000,
        });
        running.abort.abort();
      }
    }
    await running.done;
    // Still the leader while draining: the Events of the last reconciles go out before the lease does.
    if (reason === "shutdown") await withinMs(this.#events.flush(), EVENTS_FLUSH_MS);
    if (this.#running === running) {
      this.#running = undefined;
      this.#options.onLeaderChange?.(false);
    }
  }
}

/**
 * How each kind's caches follow the shards: a plugin's own kind by its objects' uids, children by
 * their parent's (through the bucket label they carry), kinds every watching plugin maps to a
 * parent by that (`Watch.shardKey`); the rest (Nodes) whole. A kind that is one plugin's own and
 * another's child is kept whole: its two keys could disagree.
 */
function kindSharding(
  plugins: readonly Plugin[],
  bucketLabel: string,
): (resource: Resource) => KindSharding | undefined {
  const parents = new Set(plugins.map((p) => resourceId(p.for)));
  const children = new Set(
    plugins.flatMap((p) => ownedKinds(p).map((o) => resourceId(o.resource))),
  );
  const keys = new Map<string, (object: KubeObject) => string | undefined>();
  const unkeyed = new Set<string>();
  for (const watch of plugins.flatMap((p) => p.watches ?? [])) {
    const id = resourceId(watch.resource);
    if (!watch.shardKey) unkeyed.add(id);
    else if (!keys.has(id)) keys.set(id, watch.shardKey.bind(watch) as (o: KubeObject) => string);
  }
  return (resource) => {
    const id = resourceId(resource);
    if (parents.has(id)) return children.has(id) ? undefined : { by: "uid" };
    if (children.has(id)) {
      return { by: "controller", label: bucketLabel, key: (o) => controllerOf(o)?.uid };
    }
    const key = keys.get(id);
    return key && !unkeyed.has(id) ? { by: "key", key } : undefined;
  };
}

/**
 * What each kind's cache keeps of its objects: what the plugins using it declare they read (the
 * union), and for children what the runtime compares; whole when some plugin using it declares
 * nothing of it (or none uses it: a kind read on demand).
 */
function projections(plugins: readonly Plugin[]): (resource: Resource) => Projection | undefined {
  return (resource) => {
    const id = resourceId(resource);
    const users = plugins.filter((p) =>
      [p.for, ...ownedKinds(p).map((o) => o.resource), ...(p.watches ?? []).map((w) => w.resource)]
        .some((r) => resourceId(r) === id)
    );
    const fields = new Set<string>();
    for (const plugin of users) {
      const declared = declaredReads(plugin, resource);
      if (!declared) return undefined;
      declared.forEach((field) => fields.add(field));
    }
    if (!users.length) return undefined;
    const managed = plugins.some((p) => ownedKinds(p).some((o) => resourceId(o.resource) === id));
    return { fields: [...fields], managed };
  };
}

/**
 * What admission may ask of the API server, apart from the reconcilers: its SubjectAccessReviews
 * and reads together, through its own client. A flood of reviews costs the API server at most
 * 20 requests at once and 10 a second after that; reviews beyond it skip what needed it.
 */
export const ADMISSION_RATE_LIMIT = { qps: 10, burst: 20 };

function hostnameOr(fallback: string): string {
  try {
    return Deno.hostname();
  } catch {
    return fallback;
  }
}

/**
 * The most a shutdown waits for the last Events (they are best effort): past it, the lease is
 * released and the process ends within the pod's grace period even if the API server is slow.
 */
const EVENTS_FLUSH_MS = 5_000;

/** Waits for `promise`, or `ms`, whichever comes first. */
async function withinMs(promise: Promise<void>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([promise, new Promise<void>((resolve) => timer = setTimeout(resolve, ms))]);
  clearTimeout(timer);
}

function abortPromise(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener("abort", () => resolve(), { once: true });
  });
}

/** In a dry run, Events are told to the report instead of written. */
function dryRunEvents(report: DryRunReport): EventRecorder {
  return {
    record(object, event) {
      const meta = object.metadata ?? {};
      const kind = object.kind ?? "object";
      report.would(`${kind} ${meta.namespace ? `${meta.namespace}/` : ""}${meta.name}`, kind, {
        verb: "event",
        what: `${event.type ?? "Normal"} ${event.reason}`,
        detail: event.message,
        controller: "",
      });
    },
  };
}
