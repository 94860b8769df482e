/**
 * Runs one plugin: turns informer changes into queue keys, runs reconciles on workers, and makes
 * the returned Outcome true (apply children, prune, write status), writing only what differs.
 */
import type { KubeClient, KubeObject } from "../kube/client.ts";
import { isApiError } from "../kube/errors.ts";
import { apiVersionOf, type Resource } from "../kube/resource.ts";
import type { ControllerMetrics } from "./controller_metrics.ts";
import {
  childUpToDate,
  controlledBy,
  isSubset,
  PLUGIN_LABEL,
  stampChild,
} from "./desired_state.ts";
import type { EventRecorder } from "./events.ts";
import type { InformerPool } from "./informer_pool.ts";
import { NotLeaderError } from "./leader_election.ts";
import type { Logger } from "./logging.ts";
import {
  type ObjectRef,
  type Outcome,
  PermanentError,
  type Plugin,
  type ReconcileContext,
  TemporaryError,
} from "./plugin.ts";
import { objectKey, splitKey, type StoreChange } from "./store.ts";
import { causeOf, WarningThrottle } from "./warning_throttle.ts";
import { WorkQueue } from "./work_queue.ts";

export interface ControllerDeps {
  client: KubeClient;
  pool: InformerPool;
  metrics: ControllerMetrics;
  events: EventRecorder;
  log: Logger;
  /** Workers when the plugin does not say; default 1. */
  concurrency?: number;
}

function refKey(ref: ObjectRef): string {
  return ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name;
}

function sameKind(resource: Resource, apiVersion: string | undefined, kind: string | undefined) {
  return resource.kind === kind && apiVersionOf(resource) === apiVersion;
}

export class Controller<T extends KubeObject = KubeObject> {
  readonly name: string;
  readonly plugin: Plugin<T>;
  readonly #deps: ControllerDeps;
  readonly #log: Logger;
  readonly #warnings: WarningThrottle;
  #queue?: WorkQueue;

  constructor(plugin: Plugin<T>, deps: ControllerDeps) {
    this.name = plugin.name;
    this.plugin = plugin;
    this.#deps = deps;
    this.#log = deps.log.with({ controller: plugin.name });
    this.#warnings = new WarningThrottle(this.#log);
    const { pool } = deps;
    pool.onChange<T>(plugin.for, (change) => {
      if (!plugin.filter || plugin.filter(change)) this.#enqueue(objectKey(change.object));
    });
    for (const owned of plugin.owns ?? []) {
      pool.onChange(owned, (change) => this.#enqueueOwner(change));
    }
    for (
      const resource of [
        ...(plugin.owns ?? []),
        ...(plugin.watches ?? []).map((w) => w.resource),
      ]
    ) {
      for (const informer of pool.informers(resource)) {
        // When a missing kind (CRD) appears, every object must be looked at again.
        informer.onInstalled(() => this.enqueueAll());
      }
    }
    for (const watch of plugin.watches ?? []) {
      const context = { cache: <R extends KubeObject>(r: Resource) => pool.cache<R>(r) };
      pool.onChange(watch.resource, (change) => {
        const objects = change.type === "updated" ? [change.old, change.object] : [change.object];
        for (const object of objects) {
          try {
            for (const ref of watch.map(object, context)) this.#enqueue(refKey(ref));
          } catch (error) {
            this.#log.error("watch mapping of {kind} failed: {error}", {
              kind: watch.resource.kind,
              error,
            });
          }
        }
      });
    }
  }

  /** Queues every cached object of the plugin's kind (start of leadership, resync). */
  enqueueAll(): void {
    for (const object of this.#deps.pool.cache(this.plugin.for).list()) {
      this.#enqueue(objectKey(object));
    }
  }

  /**
   * Runs workers until `stop` aborts, then lets in-flight reconciles finish; `abort` cancels
   * those too (their context signal). Resolves when every worker has returned.
   */
  async run(stop: AbortSignal, abort: AbortSignal): Promise<void> {
    const { metrics } = this.#deps;
    const queue = new WorkQueue({ observer: metrics.queueObserver(this.name) });
    this.#queue = queue;
    const concurrency = this.plugin.concurrency ?? this.#deps.concurrency ?? 1;
    metrics.maxConcurrent.set({ controller: this.name }, concurrency);
    metrics.activeWorkers.set({ controller: this.name }, 0);
    metrics.reconcileErrors.inc({ controller: this.name }, 0);
    this.enqueueAll();
    const shutDown = () => queue.shutDown();
    stop.addEventListener("abort", shutDown, { once: true });
    if (stop.aborted) shutDown();
    this.#log.info("started {workers} worker(s)", { workers: concurrency });
    await Promise.all(Array.from({ length: concurrency }, () => this.#worker(queue, abort)));
    stop.removeEventListener("abort", shutDown);
    if (this.#queue === queue) this.#queue = undefined;
    this.#log.info("stopped");
  }

  #enqueue(key: string): void {
    this.#queue?.add(key);
  }

  #enqueueOwner(change: StoreChange<KubeObject>): void {
    const objects = change.type === "updated" ? [change.old, change.object] : [change.object];
    for (const object of objects) {
      for (const ref of object.metadata?.ownerReferences ?? []) {
        if (ref.controller && sameKind(this.plugin.for, ref.apiVersion, ref.kind)) {
          const namespace = this.plugin.for.namespaced ? object.metadata?.namespace : undefined;
          this.#enqueue(refKey({ namespace, name: ref.name }));
        }
      }
    }
  }

  async #worker(queue: WorkQueue, abort: AbortSignal): Promise<void> {
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      const labels = { controller: this.name };
      this.#deps.metrics.activeWorkers.inc(labels);
      try {
        await this.#process(queue, key, abort);
      } finally {
        this.#deps.metrics.activeWorkers.dec(labels);
        queue.done(key);
      }
    }
  }

  async #process(queue: WorkQueue, key: string, abort: AbortSignal): Promise<void> {
    const { metrics, pool, client, events } = this.#deps;
    const { namespace, name } = splitKey(key);
    const object = pool.cache<T>(this.plugin.for).get(namespace, name);
    if (!object || object.metadata?.deletionTimestamp) {
      // Gone or going: owner references let the garbage collector remove the children.
      queue.forget(key);
      if (!object) {
        try {
          this.plugin.onDeleted?.({ namespace, name }, {
            log: this.#log,
            metrics: metrics.registry,
          });
        } catch (error) {
          this.#log.error("onDeleted of {object} failed: {error}", { object: key, error });
        }
      }
      return;
    }
    const log = this.#log.with({ object: key });
    const context: ReconcileContext = {
      client,
      cache: (resource) => pool.cache(resource),
      installed: (resource) => pool.informers(resource).every((i) => i.installed),
      log,
      events,
      metrics: metrics.registry,
      signal: abort,
    };
    const started = performance.now();
    let result: "success" | "error" | "requeue_after" = "success";
    try {
      const outcome: Outcome = (await this.plugin.reconcile(object, context)) ?? {};
      if (outcome.children) await this.#applyChildren(object, outcome.children, abort, log);
      if (outcome.status) await this.#applyStatus(object, outcome.status, abort, log);
      queue.forget(key);
      if (outcome.requeueAfterMs !== undefined && outcome.requeueAfterMs >= 0) {
        queue.addAfter(key, outcome.requeueAfterMs);
        result = "requeue_after";
      }
    } catch (error) {
      result = "error";
      metrics.reconcileErrors.inc({ controller: this.name });
      const message = error instanceof Error ? error.message : String(error);
      if (error instanceof PermanentError) {
        queue.forget(key);
        log.error("reconcile failed for good (not retried until it changes): {error}", {
          error: message,
        });
        events.record(object, { type: "Warning", reason: error.reason, message });
      } else if (abort.aborted || error instanceof NotLeaderError) {
        // Leadership ended: the next leader (maybe us again) reconciles everything anew.
        log.debug("reconcile cancelled: {error}", { error: message });
      } else {
        const delay = error instanceof TemporaryError && error.retryAfterMs !== undefined
          ? (queue.addAfter(key, error.retryAfterMs), error.retryAfterMs)
          : queue.addRateLimited(key);
        // Conflicts are routine (a newer version exists); they retry quietly. Other failures are
        // logged once per cause per interval: in an outage every object fails the same way.
        const routine = isApiError(error, 409);
        const line = "reconcile of {object} failed, retrying in {delay} ms: {error}";
        const properties = { object: key, delay: Math.round(delay), error: message };
        if (routine) log.debug(line, properties);
        else this.#warnings.warn(causeOf(error), line, properties);
        if (!routine) events.record(object, { type: "Warning", reason: "ReconcileError", message });
      }
    } finally {
      metrics.reconcileTotal.inc({ controller: this.name, result });
      metrics.reconcileTime.observe(
        { controller: this.name },
        (performance.now() - started) / 1000,
      );
    }
  }

  /** Our write's result into the shared cache (see Informer.observe). */
  #observe(resource: Resource, object: KubeObject): void {
    for (const informer of this.#deps.pool.informers(resource)) informer.observe(object);
  }

  #ownedResource(child: KubeObject): Resource {
    const resource = (this.plugin.owns ?? []).find((r) =>
      sameKind(r, child.apiVersion, child.kind)
    );
    if (!resource) {
      throw new PermanentError(
        `${this.name} returned a ${child.apiVersion} ${child.kind}, which is not in its owns list`,
        { reason: "PluginError" },
      );
    }
    return resource;
  }

  async #applyChildren(
    parent: T,
    children: KubeObject[],
    signal: AbortSignal,
    log: Logger,
  ): Promise<void> {
    const { pool, client, events } = this.#deps;
    const wanted = new Set<string>();
    for (const child of children) {
      const resource = this.#ownedResource(child);
      if (!pool.informers(resource).every((i) => i.installed)) {
        throw new TemporaryError(
          `${resource.kind} (${
            apiVersionOf(resource)
          }) is not served by the API server; is its CRD installed?`,
          { retryAfterMs: 30_000 },
        );
      }
      const stamped = await stampChild(child, parent, this.name);
      const meta = stamped.metadata!;
      wanted.add(`${resource.kind}/${meta.namespace ?? ""}/${meta.name}`);
      const cached = pool.cache(resource).get(
        resource.namespaced ? meta.namespace : undefined,
        meta.name!,
      );
      if (childUpToDate(stamped, cached)) continue;
      const applied = await client.apply(resource, stamped, {
        fieldManager: this.name,
        force: true,
        signal,
      });
      this.#observe(resource, applied);
      const verb = cached ? "Updated" : "Created";
      log.info("{verb} {kind} {child}", {
        verb: verb.toLowerCase(),
        kind: resource.kind,
        child: meta.name,
      });
      events.record(parent, {
        type: "Normal",
        reason: verb,
        message: `${verb} ${resource.kind} ${meta.name}`,
      });
    }
    const uid = parent.metadata!.uid!;
    for (const resource of this.plugin.owns ?? []) {
      for (const child of pool.cache(resource).ownedBy(uid)) {
        const meta = child.metadata!;
        if (!controlledBy(child, uid) || meta.labels?.[PLUGIN_LABEL] !== this.name) continue;
        if (wanted.has(`${resource.kind}/${meta.namespace ?? ""}/${meta.name}`)) continue;
        try {
          await client.delete(resource, meta.name!, {
            namespace: meta.namespace,
            propagationPolicy: "Background",
            signal,
          });
        } catch (error) {
          if (!isApiError(error, 404)) throw error;
        }
        log.info("deleted {kind} {child}, no longer desired", {
          kind: resource.kind,
          child: meta.name,
        });
        events.record(parent, {
          type: "Normal",
          reason: "Deleted",
          message: `Deleted ${resource.kind} ${meta.name}, no longer desired`,
        });
      }
    }
  }

  async #applyStatus(
    parent: T,
    status: Record<string, unknown>,
    signal: AbortSignal,
    log: Logger,
  ): Promise<void> {
    const desired = { ...status, observedGeneration: parent.metadata?.generation };
    const current = (parent as { status?: unknown }).status;
    if (isSubset(desired, current)) return;
    const meta = parent.metadata!;
    try {
      const written = await this.#deps.client.apply(this.plugin.for, {
        apiVersion: parent.apiVersion,
        kind: parent.kind,
        metadata: { name: meta.name, namespace: meta.namespace },
        status: desired,
      } as KubeObject, { subresource: "status", fieldManager: this.name, force: true, signal });
      this.#observe(this.plugin.for, written);
    } catch (error) {
      // Server-side apply refuses fields the schema does not declare; retrying cannot help.
      if (error instanceof Error && /not declared in schema/.test(error.message)) {
        throw new PermanentError(
          `${this.plugin.for.kind} status could not be written: ${error.message}. Declare every ` +
            `status field the plugin returns in the CRD's status schema, and observedGeneration ` +
            `(integer), which the runtime adds`,
          { reason: "StatusSchemaMismatch", cause: error },
        );
      }
      throw error;
    }
    log.debug("wrote status");
  }
}
