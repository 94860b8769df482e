/**
 * Runs one plugin: turns informer changes into queue keys, runs reconciles on workers, and hands
 * each Outcome to the applier, which writes only what differs and only what the parent controls.
 */
import type { KubeClient } from "../../kube/client.ts";
import type { KubeObject } from "../../kube/object.ts";
import { isApiError } from "../../kube/errors.ts";
import { NotLeaderError } from "../../kube/write_fence.ts";
import { apiVersionOf, type Resource } from "../../kube/resource.ts";
import { Applier, childId, writeLoopPrefix } from "./applier.ts";
import { KeyedBackoff } from "../../util/backoff.ts";
import { finalizerOf, hasFinalizer, setFinalizer } from "./finalizer.ts";
import type { ChildProblems } from "./child_problems.ts";
import type { ControllerMetrics } from "./controller_metrics.ts";
import { causeOf, type EventRecorder, type Logger, WarningThrottle } from "../observe/mod.ts";
import {
  type Informer,
  type InformerPool,
  objectKey,
  splitKey,
  StaleCacheError,
  type StoreChange,
} from "../cache/mod.ts";
import {
  type ObjectRef,
  type Outcome,
  ownedKinds,
  PermanentError,
  type Plugin,
  type ReconcileContext,
  TemporaryError,
} from "../plugin/mod.ts";
import { WorkQueue } from "./work_queue.ts";
import type { WriteLoopGuard } from "./write_loop_guard.ts";

export interface ControllerDeps {
  client: KubeClient;
  pool: InformerPool;
  metrics: ControllerMetrics;
  events: EventRecorder;
  log: Logger;
  /** Shared by the plugins of one process, so each can report what the others could not write. */
  problems: ChildProblems;
  guard: WriteLoopGuard;
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
  readonly #applier: Applier;
  /** Names taken by objects we do not control (`childId`), and the parents that want them. */
  readonly #blocked = new Map<string, Set<string>>();
  /** Delays before looking again at a parent whose children were refused: 30 s doubling to 10 min. */
  readonly #refusals = new KeyedBackoff(30_000, 600_000);
  #queue?: WorkQueue;
  /**
   * The versions (by key) whose finalizer we removed: until the cache has caught up with that
   * write, the object it still shows is one we have finalized already.
   */
  readonly #finalized = new Map<string, { uid?: string; resourceVersion?: string }>();
  /** Why the controller stopped while it should run, if it did. */
  #failure?: string;
  /** The caches of every kind the plugin declared: its reconciles are decided from them. */
  readonly #reads: Informer[];
  /** Keys put aside until a cache that was behind has listed again, by that cache. */
  readonly #parked = new Map<Informer, Set<string>>();

  constructor(plugin: Plugin<T>, deps: ControllerDeps) {
    this.name = plugin.name;
    this.plugin = plugin;
    this.#deps = deps;
    this.#log = deps.log.with({ controller: plugin.name });
    this.#warnings = new WarningThrottle(this.#log);
    const owned = ownedKinds(plugin);
    this.#applier = new Applier({
      name: plugin.name,
      for: plugin.for,
      owns: owned,
      client: deps.client,
      pool: deps.pool,
      events: deps.events,
      metrics: deps.metrics,
      guard: deps.guard,
    });
    const { pool } = deps;
    // Before anything else asks for them: the first use decides whether they are skipped.
    for (const watch of plugin.watches ?? []) {
      if (watch.optional) pool.informers(watch.resource, { optional: true });
    }
    pool.onChange<T>(plugin.for, (change) => {
      if (change.type === "deleted") this.#finalized.delete(objectKey(change.object));
      // Deletion starting always reaches a plugin with a finalizer, whatever its filter says.
      const deleting = change.type === "updated" && plugin.finalize &&
        !change.old.metadata?.deletionTimestamp && !!change.object.metadata?.deletionTimestamp;
      if (deleting || !plugin.filter || plugin.filter(change)) {
        this.#enqueue(objectKey(change.object));
      }
    });
    for (const { resource } of owned) {
      pool.onChange(resource, (change) => {
        this.#enqueueOwner(change);
        this.#enqueueBlocked(resource, change.object);
      });
    }
    const related = [
      ...owned.map((o) => o.resource),
      ...(plugin.watches ?? []).map((w) => w.resource),
    ];
    for (const resource of related) {
      for (const informer of pool.informers(resource)) {
        // When a kind (CRD) appears or goes, every object must be looked at again.
        informer.onServedChange(() => this.enqueueAll());
      }
    }
    this.#reads = [plugin.for, ...related].flatMap((resource) => pool.informers(resource));
    for (const watch of plugin.watches ?? []) {
      const context = { cache: <R extends KubeObject>(r: Resource<R>) => pool.cache(r) };
      pool.onChange(watch.resource, (change) => {
        if (watch.filter && !watch.filter(change)) return;
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
    // Another plugin could not write one of our objects' children: its status may say so.
    deps.problems.onChange((parent, by) => {
      const [kind, key] = splitParent(parent);
      if (kind === plugin.for.kind && by !== plugin.name) this.#enqueue(key);
    });
  }

  /** Queues every cached object of the plugin's kind (start of leadership, resync), now. */
  enqueueAll(): void {
    for (const object of this.#deps.pool.cache(this.plugin.for).list()) {
      this.#queue?.add(objectKey(object));
    }
  }

  /**
   * Runs workers until `stop` aborts, then lets in-flight reconciles finish; `abort` cancels
   * those too (their context signal). Resolves when every worker has returned.
   */
  async run(stop: AbortSignal, abort: AbortSignal): Promise<void> {
    this.#failure = undefined;
    try {
      await this.#run(stop, abort);
    } catch (error) {
      this.#failure = error instanceof Error ? error.message : String(error);
      throw error;
    }
  }

  /** Undefined while it works (or is not meant to run); else why it stopped. */
  get failure(): string | undefined {
    return this.#failure;
  }

  async #run(stop: AbortSignal, abort: AbortSignal): Promise<void> {
    const { metrics } = this.#deps;
    const queue = new WorkQueue({ observer: metrics.queueObserver(this.name) });
    this.#queue = queue;
    metrics.trackQueue(this.name, queue);
    metrics.reconcilePanics.inc({ controller: this.name }, 0);
    metrics.terminalErrors.inc({ controller: this.name }, 0);
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

  /** A change concerns `key`: visit it, after the plugin's debounce. */
  #enqueue(key: string): void {
    const debounce = this.plugin.debounceMs ?? 0;
    if (debounce > 0) this.#queue?.addAfter(key, debounce);
    else this.#queue?.add(key);
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

  /** An object in the way of some parent changed or went: those parents look again. */
  #enqueueBlocked(resource: Resource, object: KubeObject): void {
    const id = childId(
      resource,
      resource.namespaced ? object.metadata?.namespace : undefined,
      object.metadata?.name ?? "",
    );
    const parents = this.#blocked.get(id);
    if (!parents) return;
    this.#blocked.delete(id);
    for (const parent of parents) this.#enqueue(parent);
  }

  /** Takes keys until the queue shuts down. An error escaping a reconcile's handling ends it. */
  async #worker(queue: WorkQueue, abort: AbortSignal): Promise<void> {
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      const labels = { controller: this.name };
      this.#deps.metrics.activeWorkers.inc(labels);
      try {
        await this.#process(queue, key, abort);
      } catch (error) {
        // A bug in the machinery, not a plugin's failure (those are caught and retried): say so,
        // and let /healthz fail so the process is restarted.
        this.#failure = `a worker stopped: ${error instanceof Error ? error.message : error}`;
        this.#log.error("worker stopped with an error: {error}", { error });
        return;
      } finally {
        this.#deps.metrics.activeWorkers.dec(labels);
        queue.done(key);
      }
    }
  }

  async #process(queue: WorkQueue, key: string, abort: AbortSignal): Promise<void> {
    const { metrics, pool, client, events, problems } = this.#deps;
    const { namespace, name } = splitKey(key);
    // Nothing is decided from a cache that may have missed changes (a parent deleted during an
    // outage, whose children would be made again): the key waits until it has listed again.
    const behind = this.#reads.filter((informer) => !informer.fresh);
    if (behind.length) return this.#park(key, behind);
    const parentId = `${this.plugin.for.kind}|${key}`;
    const object = pool.cache<T>(this.plugin.for).get(namespace, name);
    const finalizer = this.plugin.finalize ? finalizerOf(this.plugin) : undefined;
    const finalizing = !!object?.metadata?.deletionTimestamp && !!finalizer &&
      hasFinalizer(object, finalizer);
    if (!object || (object.metadata?.deletionTimestamp && !finalizing)) {
      // Gone or going: owner references let the garbage collector remove the children.
      queue.forget(key);
      if (!object) {
        problems.forget(parentId);
        this.#deps.guard.forget(writeLoopPrefix(this.name, this.plugin.for.kind, key));
        // Nor is it waiting for anything any more: no backoff kept, no object in its way.
        this.#refusals.forget(key);
        for (const [id, parents] of this.#blocked) {
          if (parents.delete(key) && !parents.size) this.#blocked.delete(id);
        }
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
    const fresh = this.#freshnessFence(this.#reads);
    const writer = client.fenced(fresh.fence);
    const context: ReconcileContext = {
      client: writer,
      cache: (resource) => {
        // A kind read on demand: its writes wait for its cache as much as for the declared ones.
        for (const informer of pool.informers(resource)) fresh.read(informer);
        return pool.cache(resource);
      },
      installed: (resource) => pool.informers(resource).every((i) => i.installed),
      problems: () => problems.get(parentId),
      log,
      events,
      metrics: metrics.registry,
      signal: abort,
    };
    if (finalizing) {
      const done = this.#finalized.get(key);
      if (
        done?.uid === object.metadata?.uid &&
        done?.resourceVersion === object.metadata?.resourceVersion
      ) {
        // Woken (say, by a change its own finalize made) before the cache saw the finalizer
        // go: the object is leaving, and finalizing it again would repeat the cleanup.
        queue.forget(key);
        return;
      }
      return await this.#finalize(queue, key, object, finalizer!, context);
    }
    const applier = this.#applier.using(writer);
    const started = performance.now();
    let result: "success" | "error" | "requeue" | "requeue_after" = "success";
    try {
      if (finalizer && !hasFinalizer(object, finalizer)) {
        // Before anything is made outside Kubernetes, so that nothing can outlive the object.
        await setFinalizer(writer, this.plugin.for, object, finalizer, {
          present: true,
          signal: abort,
        });
        log.debug("added finalizer {finalizer}", { finalizer });
      }
      const outcome: Outcome = (await this.plugin.reconcile(object, context)) ?? {};
      let retryInMs: number | undefined;
      if (outcome.children) {
        const applied = await applier.applyChildren(object, outcome.children, abort, log);
        problems.set(parentId, this.name, applied.problems);
        for (const id of applied.blocked) {
          const parents = this.#blocked.get(id) ?? new Set<string>();
          this.#blocked.set(id, parents.add(key));
        }
        retryInMs = applied.retryInMs;
        const refused = applied.problems.filter((p) => p.reason !== "WriteLoopDetected");
        if (refused.length && retryInMs === undefined) {
          // Reported already (Events, problems). Looked at again when the parent or the object
          // in the way changes, and besides after a while, slower each time: what refused a
          // child (an admission policy, a quota) may change without telling us.
          queue.forget(key);
          queue.addAfter(key, this.#refusals.next(key));
          result = "error";
          metrics.reconcileErrors.inc({ controller: this.name });
          return;
        }
        this.#refusals.forget(key);
      }
      if (outcome.status) {
        if (this.plugin.writesStatus === false) {
          throw new PermanentError(
            `plugin ${this.name} returned a status but declares writesStatus: false`,
            { reason: "UndeclaredStatus" },
          );
        }
        const status = await applier.applyStatus(object, outcome.status, abort);
        if (status.retryInMs !== undefined) {
          retryInMs = Math.min(retryInMs ?? Infinity, status.retryInMs);
        }
      }
      queue.forget(key);
      const after = Math.min(outcome.requeueAfterMs ?? Infinity, retryInMs ?? Infinity);
      if (Number.isFinite(after) && after >= 0) {
        queue.addAfter(key, after);
        result = "requeue_after";
      }
    } catch (error) {
      if (error instanceof StaleCacheError && !abort.aborted) {
        // A cache fell behind while this reconcile ran: not a failure; visited again once it
        // has listed.
        result = "requeue";
        this.#park(key, [error.informer]);
        return;
      }
      result = "error";
      metrics.reconcileErrors.inc({ controller: this.name });
      const message = error instanceof Error ? error.message : String(error);
      if (isBug(error)) metrics.reconcilePanics.inc({ controller: this.name });
      if (error instanceof PermanentError) {
        metrics.terminalErrors.inc({ controller: this.name });
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
        const routine = isApiError(error, 409) || isApiError((error as Error).cause, 409);
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

  /**
   * Puts `key` aside until every cache in `behind` has listed again; then it is visited anew.
   * Not a failure: no backoff, no error counted, nothing written.
   */
  #park(key: string, behind: Informer[]): void {
    this.#log.debug("{object} waits for the cache of {kinds} to list again", {
      object: key,
      kinds: [...new Set(behind.map((i) => i.resource.kind))].join(", "),
    });
    for (const informer of behind) {
      let keys = this.#parked.get(informer);
      if (!keys) {
        keys = new Set();
        this.#parked.set(informer, keys);
        const parked = keys;
        informer.whenFresh().then(() => {
          this.#parked.delete(informer);
          for (const parkedKey of parked) this.#queue?.add(parkedKey);
        });
      }
      keys.add(key);
    }
  }

  /**
   * The write fence of one reconcile: every cache it read (the declared ones at once, others as
   * they are read) must be fresh and not have fallen behind since, right before each write leaves.
   */
  #freshnessFence(declared: Informer[]): { fence: () => void; read: (i: Informer) => void } {
    const epochs = new Map(declared.map((informer) => [informer, informer.epoch]));
    return {
      read: (informer) => {
        if (!epochs.has(informer)) epochs.set(informer, informer.epoch);
      },
      fence: () => {
        for (const [informer, epoch] of epochs) {
          if (!informer.fresh || informer.epoch !== epoch) throw new StaleCacheError(informer);
        }
      },
    };
  }

  /**
   * Deletion has started and our finalizer holds the object: the plugin cleans up, then the
   * finalizer goes and the object with it. A failure is retried with backoff, whatever its kind
   * (a permanent one would hold the object forever), and told in a `FinalizeFailed` Event.
   */
  async #finalize(
    queue: WorkQueue,
    key: string,
    object: T,
    finalizer: string,
    context: ReconcileContext,
  ): Promise<void> {
    const { metrics, client, events } = this.#deps;
    const started = performance.now();
    let result: "success" | "error" = "success";
    try {
      await this.plugin.finalize!(object, context);
      try {
        await setFinalizer(client, this.plugin.for, object, finalizer, {
          present: false,
          signal: context.signal,
        });
      } catch (error) {
        // Gone already: the finalizer was removed meanwhile (by hand, or by a former leader).
        if (!isApiError(error, 404)) throw error;
      }
      const { uid, resourceVersion } = object.metadata ?? {};
      this.#finalized.set(key, { uid, resourceVersion });
      queue.forget(key);
      context.log.info("finalized; removed finalizer {finalizer}", { finalizer });
    } catch (error) {
      result = "error";
      metrics.reconcileErrors.inc({ controller: this.name });
      const message = error instanceof Error ? error.message : String(error);
      if (context.signal.aborted || error instanceof NotLeaderError) return;
      const delay = queue.addRateLimited(key);
      if (isApiError(error, 409)) return; // changed meanwhile: look again
      this.#warnings.warn(
        causeOf(error),
        "finalize of {object} failed, retrying in {delay} ms: {error}",
        {
          object: key,
          delay: Math.round(delay),
          error: message,
        },
      );
      events.record(object, { type: "Warning", reason: "FinalizeFailed", message });
    } finally {
      metrics.reconcileTotal.inc({ controller: this.name, result });
      metrics.reconcileTime.observe(
        { controller: this.name },
        (performance.now() - started) / 1000,
      );
    }
  }
}

/** A JavaScript error that only a bug raises: what Go would call a panic. */
function isBug(error: unknown): boolean {
  return error instanceof TypeError || error instanceof ReferenceError ||
    error instanceof RangeError || error instanceof SyntaxError;
}

/** `Kind|namespace/name` → [Kind, namespace/name]. */
function splitParent(parent: string): [string, string] {
  const bar = parent.indexOf("|");
  return [parent.slice(0, bar), parent.slice(bar + 1)];
}
