/**
 * The shared event loop: starts the informers every plugin needs, waits for them to sync, runs the
 * controllers only while leader, serves metrics and probes, and shuts down gracefully.
 */
import type { KeepAliveOptions, KubeClient, KubeObject } from "../kube/client.ts";
import { ChildProblems } from "./child_problems.ts";
import { Controller } from "./controller.ts";
import { ControllerMetrics, exposeRequestCounts, leaderGauge } from "./controller_metrics.ts";
import { KubeEventRecorder } from "./events.ts";
import { InformerPool } from "./informer_pool.ts";
import { exposeProcessMetrics } from "./process_metrics.ts";
import { defaultIdentity, LeaderElector, type StopReason } from "./leader_election.ts";
import { log as rootLog, type Logger } from "./logging.ts";
import { Registry } from "./metrics.ts";
import { MAX_CONCURRENCY, type Plugin } from "./plugin.ts";
import { type BindAddress, Checks, type EndpointServer, serveEndpoints } from "./probes.ts";
import { WriteLoopGuard, type WriteLoopGuardOptions } from "./write_loop_guard.ts";
import { type Conversion, type ServingCertificate, WebhookServer } from "./webhook_server.ts";

export interface ManagerOptions {
  client: KubeClient;
  plugins: Plugin[];
  /** Namespaces to watch; all when absent or empty. */
  namespaces?: string[];
  /** Lease to lead on, or false to run controllers at once (one instance only!). */
  leaderElection?: false | {
    namespace: string;
    name: string;
    identity?: string;
    leaseDurationMs?: number;
    renewDeadlineMs?: number;
    retryPeriodMs?: number;
  };
  /** Where to serve `/metrics`; undefined to not serve. `flag` names it in errors. */
  metricsBind?: BindAddress;
  /** Where to serve `/healthz` and `/readyz`; undefined to not serve. */
  healthBind?: BindAddress;
  /**
   * The plugins' admission and the CRDs' conversion over HTTPS, on every replica (leader or
   * not); `/readyz` fails while they are not served. Undefined to serve none.
   */
  webhooks?: {
    bind: BindAddress;
    /** The serving certificate, asked again every few seconds (a rotation is taken at once). */
    certificate: () => Promise<ServingCertificate | undefined>;
    conversions?: Conversion[];
    reloadMs?: number;
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
   * How the connection to the API server is checked. `/readyz` fails while requests get no
   * answer; `/healthz` fails once that has lasted `unhealthyAfterMs` (default 60 s), so the
   * kubelet restarts a process that cannot recover by itself. Longer rides out API server
   * upgrades without restarts; shorter restarts sooner when something local is stuck.
   */
  connection?: KeepAliveOptions & { unhealthyAfterMs?: number };
  /** When a child or status rewritten again and again counts as a loop; see WriteLoopGuard. */
  writeLoopGuard?: WriteLoopGuardOptions;
  /** Workers per plugin that does not set its own `concurrency`; default 1. */
  concurrency?: number;
  /** The component name in Events; default `ptemplate-operator`. */
  component?: string;
  registry?: Registry;
  log?: Logger;
  /**
   * Told when this instance starts leading (before any reconcile) and when it has stopped
   * (after every reconcile ended): for tests and status pages.
   */
  onLeaderChange?: (leading: boolean) => void;
}

/** Addresses actually bound, once running. */
export interface ManagerEndpoints {
  metricsPort?: number;
  healthPort?: number;
  webhookPort?: number;
}

export class Manager {
  readonly registry: Registry;
  /** The webhook server, while running with `webhooks`. */
  webhooks?: WebhookServer;
  readonly pool: InformerPool;
  readonly controllers: Controller<KubeObject>[];
  readonly #options: ManagerOptions;
  readonly #log: Logger;
  readonly #events: KubeEventRecorder;
  readonly #elector?: LeaderElector;
  readonly endpoints: ManagerEndpoints = {};
  #running?: { stop: AbortController; abort: AbortController; done: Promise<void> };

  constructor(options: ManagerOptions) {
    this.#options = options;
    this.#log = options.log ?? rootLog("manager");
    this.registry = options.registry ?? new Registry();
    exposeRequestCounts(this.registry, options.client.requests);
    exposeProcessMetrics(this.registry);
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
    }
    this.pool = new InformerPool(options.client, {
      namespaces: options.namespaces,
      log: rootLog("informer"),
      silenceTimeoutMs: options.watchSilenceTimeoutMs,
    });
    if (options.leaderElection) {
      // Urgent: a renewal must not queue behind a backlog of writes and miss its deadline.
      this.#elector = new LeaderElector(options.client.urgent(), {
        ...options.leaderElection,
        identity: options.leaderElection.identity ?? defaultIdentity(),
        log: rootLog("leader-election"),
        gauge: leaderGauge(this.registry),
      });
    }
    // Everything that writes on the leader's behalf (children, status, Events, a plugin's own
    // requests) goes through the fence: nothing is sent once leadership could have been lost.
    const client = this.#elector ? options.client.fenced(this.#elector.fence) : options.client;
    this.#events = new KubeEventRecorder(client, {
      component: options.component ?? "ptemplate-operator",
      log: rootLog("events"),
    });
    const metrics = new ControllerMetrics(this.registry);
    const problems = new ChildProblems();
    const guard = new WriteLoopGuard(options.writeLoopGuard);
    this.controllers = options.plugins.map((plugin) =>
      // The informer hands each plugin objects of the kind it declared in `for`.
      new Controller(plugin, {
        client,
        pool: this.pool,
        metrics,
        events: this.#events,
        log: rootLog("controller"),
        problems,
        guard,
        concurrency: options.concurrency,
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
    const servers: EndpointServer[] = [];
    const readyz = new Checks("readyz");
    const healthz = new Checks("healthz");
    healthz.add("ping", () => undefined);
    const health = this.#options.client.transport.health;
    const unhealthyAfterMs = this.#options.connection?.unhealthyAfterMs ?? 60_000;
    healthz.add("api-server", () => {
      const down = health.unreachable();
      if (!down || down.forMs < unhealthyAfterMs) return undefined;
      return `no answer for ${Math.round(down.forMs / 1000)} s: ${down.error.message}`;
    });
    readyz.add("api-server", () => {
      const down = health.unreachable();
      return down && `no answer for ${Math.round(down.forMs / 1000)} s: ${down.error.message}`;
    });
    healthz.add("controllers", () => {
      if (!this.#running) return undefined;
      const failed = this.controllers.filter((c) => c.failure);
      return failed.length ? failed.map((c) => `${c.name}: ${c.failure}`).join("; ") : undefined;
    });
    const webhooks = this.#options.webhooks
      ? new WebhookServer({
        ...this.#options.webhooks,
        plugins: this.#options.plugins,
        // Reads only, and not through the fence: every replica answers the API server.
        context: {
          client: this.#options.client,
          cache: (resource) => this.pool.cache(resource),
          installed: (resource) => this.pool.informers(resource).every((i) => i.installed),
          log: rootLog("webhooks"),
        },
        log: rootLog("webhooks"),
      })
      : undefined;
    this.webhooks = webhooks;
    if (webhooks) readyz.add("webhooks", () => webhooks.problem);
    readyz.add("informers-synced", () => {
      const pending = this.pool.all().filter((i) => !i.hasSynced).map((i) => i.resource.kind);
      return pending.length ? `waiting for ${[...new Set(pending)].join(", ")}` : undefined;
    });
    const { metricsBind, healthBind } = this.#options;
    let keepingAlive: Promise<void> | undefined;
    try {
      if (metricsBind && healthBind && metricsBind.port === healthBind.port && metricsBind.port) {
        const server = serveEndpoints(metricsBind, { metrics: this.registry, healthz, readyz });
        servers.push(server);
        this.endpoints.metricsPort = this.endpoints.healthPort = server.port;
      } else {
        if (metricsBind) {
          const server = serveEndpoints(metricsBind, { metrics: this.registry });
          servers.push(server);
          this.endpoints.metricsPort = server.port;
        }
        if (healthBind) {
          const server = serveEndpoints(healthBind, { healthz, readyz });
          servers.push(server);
          this.endpoints.healthPort = server.port;
        }
      }
      for (
        const [what, port, bind] of [
          ["metrics", this.endpoints.metricsPort, metricsBind],
          ["probes", this.endpoints.healthPort, healthBind],
        ] as const
      ) {
        if (port !== undefined) {
          this.#log.info("serving {what} on {address}", {
            what,
            address: `${bind!.hostname}:${port}`,
            port,
          });
        }
      }
      if (webhooks) {
        await webhooks.start();
        this.endpoints.webhookPort = webhooks.port;
        this.#log.info("serving {what} on {address}", {
          what: "webhooks",
          address: `${this.#options.webhooks!.bind.hostname}:${webhooks.port}`,
          port: webhooks.port,
        });
      }
      this.pool.start(informers.signal);
      keepingAlive = this.#options.client.keepAlive(informers.signal, this.#options.connection);
      this.#log.info("waiting for {count} informer(s) to sync", { count: this.pool.all().length });
      await Promise.race([this.pool.synced(), abortPromise(signal)]);
      if (signal.aborted) return;
      this.#log.info("caches synced");
      const resync = setInterval(
        () => this.controllers.forEach((c) => c.enqueueAll()),
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
    } finally {
      informers.abort();
      await this.pool.stopped();
      await keepingAlive;
      await withinMs(this.#events.close(), EVENTS_FLUSH_MS);
      await webhooks?.stop();
      await Promise.all(servers.map((s) => s.shutdown()));
      this.#log.info("stopped");
    }
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

/**
 * An AbortSignal that fires on the first SIGTERM or SIGINT: a graceful drain and lease release.
 * Repeats within `repeatWindowMs` are the same request (a terminal's Ctrl-C under `deno task`
 * reaches the operator twice: from the terminal, and forwarded by deno task); a signal after
 * that window forces an exit at once.
 */
export function shutdownSignal(
  log: Logger = rootLog("manager"),
  options: { repeatWindowMs?: number } = {},
): AbortSignal {
  const windowMs = options.repeatWindowMs ?? 2_000;
  const controller = new AbortController();
  let first: number | undefined;
  const handler = (signal: Deno.Signal) => () => {
    if (first === undefined) {
      first = performance.now();
      log.info("received {signal}; shutting down (again after {seconds} s to exit at once)", {
        signal,
        seconds: windowMs / 1000,
      });
      controller.abort();
    } else if (performance.now() - first < windowMs) {
      log.debug("{signal} again: already shutting down", { signal });
    } else {
      log.warn("{signal} again: exiting now, without finishing", { signal });
      Deno.exit(1);
    }
  };
  Deno.addSignalListener("SIGTERM", handler("SIGTERM"));
  Deno.addSignalListener("SIGINT", handler("SIGINT"));
  return controller.signal;
}
