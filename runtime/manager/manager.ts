/**
 * The shared event loop: starts the informers every plugin needs, waits for them to sync, runs the
 * controllers only while leader, serves metrics and probes, and shuts down gracefully.
 */
import type { KubeObject } from "../../kube/object.ts";
import { bucketLabel, bucketOf } from "../../kube/shard_range.ts";
import { whenAborted, withinMs } from "../../util/sleep.ts";
import {
  AccessReviewer,
  connectionChecks,
  type EventRecorder,
  exposeConnections,
  exposeProcessMetrics,
  exposeRequestCounts,
  KubeEventRecorder,
  log as rootLog,
  type Logger,
  Probes,
  Registry,
} from "../observe/mod.ts";
import {
  BulkWrites,
  cause,
  ChildProblems,
  Controller,
  controllerChecks,
  ControllerMetrics,
  WriteLoopGuard,
} from "../reconcile/mod.ts";
import { defaultIdentity, LeaderElector, leaderGauge } from "../leader/mod.ts";
import { InformerPool } from "../cache/mod.ts";
import { shardNames, ShardRing } from "../shards/mod.ts";
import { fieldManagerOf, type OperatorIdentity, PTEMPLATE_OPERATOR } from "../identity/mod.ts";
import { ownedKinds } from "../plugin/mod.ts";
import type { PluginRunner } from "../isolation/mod.ts";
import { WebhookServer } from "../webhooks/mod.ts";
import { CallerClients, type CallerRateLimit } from "./caller_clients.ts";
import { ControllerGroup, EVENTS_FLUSH_MS } from "./controller_group.ts";
import { kindSharding, projections } from "./kind_plans.ts";
import {
  checkManagerOptions,
  type ManagerEndpoints,
  type ManagerOptions,
} from "./manager_options.ts";
import { ManagerServers } from "./manager_servers.ts";

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
  readonly #group: ControllerGroup;

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
    checkManagerOptions(options, operator);
    const managers = new Set(options.plugins.map((p) => fieldManagerOf(operator, p.name)));
    const { leaderElection, shards, dryRun } = options;
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
    const events: EventRecorder = dryRun ? dryRun.events() : this.#events;
    const metrics = new ControllerMetrics(this.registry);
    const problems = new ChildProblems();
    const guard = new WriteLoopGuard(options.writeLoopGuard);
    const bulkWrites = new BulkWrites();
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
        bulkWrites,
        concurrency: options.concurrency,
        runner: this.#runners.get(plugin.name),
        reconcileTimeoutMs: options.reconcileTimeoutMs,
        visitHistory: options.visitHistory,
        priorityQueue: options.priorityQueue,
      })
    );
    this.#group = new ControllerGroup(this.controllers, {
      gracefulShutdownMs: options.gracefulShutdownMs,
      events: this.#events,
      log: this.#log,
      onLeaderChange: options.onLeaderChange,
    });
  }

  /** True while this instance runs the controllers. */
  get leading(): boolean {
    return this.#group.running;
  }

  /**
   * Runs until `signal` aborts, then drains in-flight reconciles (up to the graceful period),
   * releases the lease and returns. Never throws for a plugin's failure.
   */
  async run(signal: AbortSignal): Promise<void> {
    const informers = new AbortController();
    const callers = new CallerClients(this.#options.client.transport.config, this.operator.name);
    const webhooks = this.#options.webhooks && this.#webhookServer(this.#options.webhooks, callers);
    this.webhooks = webhooks;
    const servers = new ManagerServers({
      ...this.#options,
      registry: this.registry,
      controllers: this.controllers,
      endpoints: this.endpoints,
      log: this.#log,
    });
    try {
      await servers.serve(this.#probes(webhooks), (purpose) => callers.client(purpose));
      if (webhooks) await servers.listen("webhooks", webhooks, this.#options.webhooks!.bind);
      this.endpoints.webhookPort = webhooks?.port;
      const { connection } = this.#options;
      if (connection) this.#options.client.transport.health.configure(connection);
      this.pool.start(informers.signal);
      this.#log.info("waiting for {count} informer(s) to sync", { count: this.pool.all().length });
      await Promise.race([this.pool.synced(), whenAborted(signal)]);
      if (signal.aborted) return;
      this.#log.info("caches synced");
      if (this.#ring) await this.#serveShards(this.#ring, signal);
      else await this.#lead(signal);
    } finally {
      informers.abort();
      await this.pool.stopped();
      await withinMs(this.#events.close(), EVENTS_FLUSH_MS);
      await servers.stop();
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
   * Resolves once every controller has visited every object it had when it started (a dry run's
   * one pass); the controllers must be running.
   */
  firstPass(): Promise<void> {
    return Promise.all(this.controllers.map((c) => c.firstPass)).then(() => undefined);
  }

  /** Puts every object on its controllers' queues (bulk work) every resync period, from now on. */
  #resyncEvery(): ReturnType<typeof setInterval> {
    return setInterval(() => {
      this.#log.info("resync: every object queued again");
      this.controllers.forEach((c) => c.enqueueAll(cause("resync")));
    }, this.#options.resyncPeriodMs ?? 10 * 3600_000);
  }

  /** Runs the controllers while this instance leads (at once, without leader election). */
  async #lead(signal: AbortSignal): Promise<void> {
    const resync = this.#resyncEvery();
    try {
      if (this.#elector) {
        await this.#elector.run(signal, {
          onStartedLeading: () => this.#group.start(),
          onStoppedLeading: (reason) => this.#group.stop(reason),
        });
      } else {
        this.#group.start();
        await whenAborted(signal);
        await this.#group.stop("shutdown");
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
    const resync = this.#resyncEvery();
    this.#group.start();
    try {
      await ring.run(signal);
    } finally {
      clearInterval(resync);
      await this.#group.stop("shutdown");
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
    callers: CallerClients,
  ): WebhookServer {
    // Reads only, and not through the fence: every replica answers the API server.
    const client = callers.client("admission", ADMISSION_RATE_LIMIT);
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
}

/**
 * What admission may ask of the API server, apart from the reconcilers: its SubjectAccessReviews
 * and reads together, through its own client. A flood of reviews costs the API server at most
 * 20 requests at once and 10 a second after that; reviews beyond it skip what needed it.
 */
export const ADMISSION_RATE_LIMIT: CallerRateLimit = { qps: 10, burst: 20 };
