/**
 * Runs one plugin: turns informer changes into queue keys, runs reconciles on workers, and hands
 * each Outcome to the applier, which writes only what differs and only what the parent controls.
 * What happens after a visit is decided by `nextStep` (next_step.ts); this carries it out.
 */
import type { KubeClient } from "../../kube/client.ts";
import { isApiError } from "../../kube/errors.ts";
import type { KubeObject, Stored } from "../../kube/object.ts";
import {
  type ObjectRef,
  objectRef,
  ownerRefOf,
  parseRefKey,
  refKey,
  refTo,
} from "../../kube/object_ref.ts";
import { apiVersionOf, type Resource } from "../../kube/resource.ts";
import type { WriteFence } from "../../kube/write_fence.ts";
import { KeyedBackoff } from "../../util/backoff.ts";
import {
  type CacheReader,
  type Informer,
  type InformerPool,
  relevantChange,
  StaleCacheError,
  type StoreChange,
  strictObject,
  strictReader,
} from "../cache/mod.ts";
import {
  causeOf,
  type EventRecorder,
  type Logger,
  type ProbeChecks,
  WarningThrottle,
} from "../observe/mod.ts";
import {
  declaredReads,
  type Outcome,
  ownedKinds,
  PermanentError,
  type Plugin,
  type ReconcileContext,
} from "../plugin/mod.ts";
import {
  clearQuarantine,
  inProcessRunner,
  type PluginRunner,
  Quarantine,
  type QuarantineNotice,
  ReconcileTimeoutError,
  reportQuarantine,
  VisitDeadline,
  whenReady,
  WorkerInterruptedError,
} from "../isolation/mod.ts";
import type { OperatorIdentity } from "../identity/mod.ts";
import { Applier } from "./applier.ts";
import type { ChildProblems } from "./child_problems.ts";
import type { ControllerMetrics } from "./controller_metrics.ts";
import { finalizerOf, hasFinalizer, setFinalizer } from "./finalizer.ts";
import { messageOf, nextStep, type Step, type Visit } from "./next_step.ts";
import { WorkQueue } from "./work_queue.ts";
import type { WriteLoopGuard } from "./write_loop_guard.ts";

export interface ControllerDeps {
  /** Whose runtime this is: its field managers, labels, annotations and default finalizers. */
  operator: OperatorIdentity;
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
  /** Where the plugin's code runs; default in this isolate. */
  runner?: PluginRunner;
  /** The deadline of a reconcile or finalize when the plugin does not say; default 60 s. */
  reconcileTimeoutMs?: number;
  /**
   * When replicas split the keys (a ring of shards): who may reconcile an object now. Without
   * it, this replica reconciles every key (while it leads).
   */
  claims?: KeyClaims;
  /** Labels of the runtime's own on every child of a parent; see ApplierDeps.childLabels. */
  childLabels?: (parent: KubeObject) => Record<string, string>;
  /**
   * The plugin's reads of a field it did not declare (`reads`) throw an UndeclaredReadError
   * instead of reading what the cache kept: for tests. Costs a proxy per object read.
   */
  strictReads?: boolean;
}

/** Who may reconcile which object now, when replicas split the keys (runtime/shards/). */
export interface KeyClaims {
  /**
   * The right to reconcile the object with `uid` now, or undefined when it is another
   * replica's (or nobody's yet). Released when the visit ends.
   */
  claim(uid: string): KeyClaim | undefined;
}

/** The right to reconcile one key, for the shard it belongs to. */
export interface KeyClaim {
  /** The shard: caches of other shards do not hold this key's world. */
  shard: number;
  /** Every write of the visit passes it (the shard's lease is surely held). */
  fence: WriteFence;
  /** Aborts when the shard is lost (or its hand-over stops waiting). */
  signal: AbortSignal;
  release(): void;
}

/** The deadline of a reconcile or finalize when neither the plugin nor the manager says. */
export const DEFAULT_RECONCILE_TIMEOUT_MS = 60_000;

/** A visit, with what the step after it needs. */
interface Visited<T extends KubeObject> {
  visit: Visit;
  /** The object, when it was there. */
  object?: Stored<T>;
  /** The caches to wait for, when the step parks the key. */
  behind?: Informer[];
  /** The finalizer, for the line that says it was removed. */
  finalizer?: string;
}

export class Controller<T extends KubeObject = KubeObject> {
  readonly name: string;
  readonly plugin: Plugin<T>;
  readonly #deps: ControllerDeps;
  readonly #log: Logger;
  readonly #warnings: WarningThrottle;
  readonly #applier: Applier;
  /** Names taken by objects we do not control (`refKey`), and the parents (keys) that want them. */
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
  /** Where the plugin's code runs. */
  readonly #runner: PluginRunner;
  /** Keys put aside after reconciles that kept passing their deadline. */
  readonly #quarantine = new Quarantine();
  /** Keys whose object carries our quarantine condition, to take it off once a visit works. */
  readonly #conditioned = new Set<string>();
  /**
   * The parents being visited, with the children that appeared meanwhile and the children the
   * visit made as it wanted them (uid and resourceVersion each). A child the visit made itself is
   * no news to its parent (at 10,000 parents, one visit in five of the plugins that make
   * children); whether one that appears is, is known only once the create's answer is in, which
   * the watch often beats: so their parent's next visit is decided when this one ends.
   */
  readonly #visiting = new Map<string, { appeared: string[]; made: string[] }>();

  constructor(plugin: Plugin<T>, deps: ControllerDeps) {
    this.name = plugin.name;
    this.plugin = plugin;
    this.#deps = deps;
    this.#log = deps.log.with({ controller: plugin.name });
    this.#warnings = new WarningThrottle(this.#log);
    this.#runner = deps.runner ?? inProcessRunner(plugin);
    const owned = ownedKinds(plugin);
    this.#applier = new Applier({
      name: plugin.name,
      operator: deps.operator,
      for: plugin.for,
      owns: owned,
      client: deps.client,
      pool: deps.pool,
      events: deps.events,
      metrics: deps.metrics,
      guard: deps.guard,
      childLabels: deps.childLabels,
      created: (parent, child) => this.#visiting.get(refKey(parent))?.made.push(versionOf(child)),
    });
    const { pool } = deps;
    // Before anything else asks for them: the first use decides whether they are skipped.
    for (const watch of plugin.watches ?? []) {
      if (watch.optional) pool.informers(watch.resource, { optional: true });
    }
    // An update that changed nothing the plugin reads (nor what the runtime acts on) visits no
    // one: most updates are statuses written by other controllers and plugins.
    const seen = (resource: Resource) => {
      const relevant = relevantChange(declaredReads(plugin, resource));
      return (change: StoreChange<KubeObject>) =>
        change.type !== "updated" || relevant(change.old, change.object);
    };
    // Every object the caches hold came from the API server: it is stored, named and with a uid.
    const ownSeen = seen(plugin.for);
    pool.onChange<Stored<T>>(plugin.for, (change) => {
      const key = this.#keyOf(change.object);
      if (change.type === "deleted") this.#finalized.delete(key);
      if (!ownSeen(change)) return;
      // Deletion starting always reaches a plugin with a finalizer, whatever its filter says.
      const deleting = change.type === "updated" && plugin.finalize &&
        !change.old.metadata?.deletionTimestamp && !!change.object.metadata?.deletionTimestamp;
      if (deleting) return this.#enqueue(key);
      whenReady(
        () => this.#runner.filter(change),
        (pass) => pass && this.#enqueue(key),
        (error) => this.#log.error("filter of {object} failed: {error}", { object: key, error }),
      );
    });
    for (const { resource } of owned) {
      const childSeen = seen(resource);
      pool.onChange(resource, (change) => {
        if (childSeen(change)) this.#enqueueOwner(change);
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
    for (const [index, watch] of (plugin.watches ?? []).entries()) {
      const context = {
        cache: <R extends KubeObject, N extends boolean>(resource: Resource<R, N>) =>
          this.#reader(resource, pool.cache(resource)),
      };
      const failed = (error: unknown) =>
        this.#log.error("watch mapping of {kind} failed: {error}", {
          kind: watch.resource.kind,
          error,
        });
      const map = (object: Stored<KubeObject>) =>
        whenReady(() => this.#runner.map(index, object, context), (refs) => {
          for (const at of refs) this.#enqueue(refKey(refTo(plugin.for, at)));
        }, failed);
      const watchSeen = seen(watch.resource);
      pool.onChange<Stored<KubeObject>>(watch.resource, (raw) => {
        if (!watchSeen(raw)) return;
        const change = this.#strictChange(watch.resource, raw);
        whenReady(() => this.#runner.watchFilter(index, change), (pass) => {
          if (!pass) return;
          if (change.type === "updated") map(change.old);
          map(change.object);
        }, failed);
      });
    }
    // Another plugin could not write one of our objects' children: its status may say so.
    deps.problems.onChange((parent, by) => {
      const ours = parent.kind === plugin.for.kind && parent.group === plugin.for.group;
      if (ours && by !== plugin.name) this.#enqueue(refKey(parent));
    });
  }

  /** Queues every cached object of the plugin's kind (start of leadership, resync), now. */
  enqueueAll(): void {
    for (const object of this.#deps.pool.cache(this.plugin.for).list()) {
      this.#queue?.add(this.#keyOf(object));
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
      this.#failure = messageOf(error);
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
    metrics.reconcileTimeouts.inc({ controller: this.name }, 0);
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

  /** The cache of `resource` as the plugin may read it (strictly, in tests). */
  #reader<R extends KubeObject, N extends boolean>(
    resource: Resource<R, N>,
    reader: CacheReader<R, N>,
  ): CacheReader<R, N> {
    const fields = this.#deps.strictReads && declaredReads(this.plugin, resource);
    if (!fields) return reader;
    return strictReader(reader, { plugin: this.name, kind: resource.kind, projection: { fields } });
  }

  /** An object of `resource` as the plugin may read it (strictly, in tests). */
  #strict<O extends KubeObject>(resource: Resource, object: O): O {
    const fields = this.#deps.strictReads && declaredReads(this.plugin, resource);
    if (!fields) return object;
    return strictObject(object, { plugin: this.name, kind: resource.kind, projection: { fields } });
  }

  /** A change of a watched kind as the plugin may read it. */
  #strictChange<O extends KubeObject>(resource: Resource, change: StoreChange<O>): StoreChange<O> {
    if (!this.#deps.strictReads || !declaredReads(this.plugin, resource)) return change;
    const view = (object: O) => this.#strict(resource, object);
    return change.type === "updated"
      ? { type: "updated", object: view(change.object), old: view(change.old) }
      : { type: change.type, object: view(change.object) };
  }

  /** The queue key of an object of the plugin's kind. */
  #keyOf(object: KubeObject): string {
    return refKey(objectRef(this.plugin.for, object));
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
      for (const key of controllerKeys(object, this.plugin.for)) {
        const visit = change.type === "added" ? this.#visiting.get(key) : undefined;
        if (visit) visit.appeared.push(versionOf(object));
        else this.#enqueue(key);
      }
    }
  }

  /** An object in the way of some parent changed or went: those parents look again. */
  #enqueueBlocked(resource: Resource, object: KubeObject): void {
    const id = refKey(objectRef(resource, object));
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
        this.#failure = `a worker stopped: ${messageOf(error)}`;
        this.#log.error("worker stopped with an error: {error}", { error });
        return;
      } finally {
        this.#deps.metrics.activeWorkers.dec(labels);
        queue.done(key);
      }
    }
  }

  /** One visit of `key`: look, decide (`nextStep`), carry it out. */
  async #process(queue: WorkQueue, key: string, abort: AbortSignal): Promise<void> {
    const parent = parseRefKey(key);
    const started = performance.now();
    const current = this.#deps.pool.cache(this.plugin.for).get(parent.namespace, parent.name);
    if (this.#quarantine.holds(key, current?.metadata)) return;
    const deadline = new VisitDeadline(
      this.plugin.reconcileTimeoutMs ?? this.#deps.reconcileTimeoutMs ??
        DEFAULT_RECONCILE_TIMEOUT_MS,
      abort,
    );
    let visited;
    const news = { appeared: [] as string[], made: [] as string[] };
    this.#visiting.set(key, news);
    try {
      visited = await this.#visit(parent, key, deadline);
    } finally {
      deadline.end();
      this.#visiting.delete(key);
      // Children that appeared meanwhile, other than the ones it made as it wanted them.
      if (news.appeared.some((version) => !news.made.includes(version))) this.#enqueue(key);
    }
    const error = "error" in visited.visit ? visited.visit.error : undefined;
    // Its Worker was ended by another key's visit: this one did nothing wrong, and goes again.
    if (error instanceof WorkerInterruptedError) return queue.add(key);
    const step = nextStep(visited.visit);
    this.#carryOut(step, { queue, key, parent, visited });
    if (error instanceof ReconcileTimeoutError) this.#timedOut(queue, key, visited.object, error);
    else if (visited.visit.kind !== "behind") this.#finishedInTime(key, visited.object);
    if (step.result) {
      const { metrics } = this.#deps;
      metrics.reconcileTotal.inc({ controller: this.name, result: step.result });
      metrics.reconcileTime.observe(
        { controller: this.name },
        (performance.now() - started) / 1000,
      );
    }
  }

  /**
   * Looks at the caches and the object, and runs the plugin's `reconcile` (or `finalize`) with
   * the applier behind it. Never throws for what the plugin or the API server did: that is the
   * visit's outcome.
   */
  async #visit(parent: ObjectRef, key: string, deadline: VisitDeadline): Promise<Visited<T>> {
    const { pool, claims } = this.#deps;
    // Nothing is decided from a cache that may have missed changes (a parent deleted during an
    // outage, whose children would be made again): the key waits until it has listed again.
    const object = pool.cache(this.plugin.for).get(parent.namespace, parent.name);
    if (!object) {
      const behind = this.#reads.filter((informer) => !informer.fresh);
      if (behind.length) return { visit: { kind: "behind" }, behind };
      return { visit: { kind: "gone" } };
    }
    const claim = claims?.claim(object.metadata.uid);
    if (claims && !claim) return { visit: { kind: "elsewhere" } };
    try {
      return await this.#visitClaimed(object, parent, key, deadline, claim);
    } finally {
      claim?.release();
    }
  }

  /** A visit of an object this replica may reconcile now (its shard's, with a ring). */
  async #visitClaimed(
    object: Stored<T>,
    parent: ObjectRef,
    key: string,
    deadline: VisitDeadline,
    claim: KeyClaim | undefined,
  ): Promise<Visited<T>> {
    const { pool, events, metrics, problems } = this.#deps;
    // The caches of other shards hold none of this key's world.
    const mine = (informer: Informer) =>
      informer.shard === undefined || informer.shard === claim?.shard;
    const reads = this.#reads.filter(mine);
    const behind = reads.filter((informer) => !informer.fresh);
    if (behind.length) return { visit: { kind: "behind" }, behind };
    // A shard lost or handed over: the visit's writes are refused at once, and its signal aborts
    // as on lost leadership.
    const client = claim ? this.#deps.client.fenced(claim.fence) : this.#deps.client;
    if (claim) deadline.follow(claim.signal);
    const finalizer = this.plugin.finalize
      ? finalizerOf(this.plugin, this.#deps.operator)
      : undefined;
    const deleting = !!object.metadata.deletionTimestamp;
    const finalizing = deleting && !!finalizer &&
      hasFinalizer(object, this.plugin, this.#deps.operator);
    if (deleting && !finalizing) return { visit: { kind: "deleting" }, object };
    const fresh = freshnessFence(reads);
    // Past its deadline a visit writes nothing more, even if the plugin's code still runs.
    const writer = client.fenced(fresh.fence).fenced(deadline.fence);
    const context: ReconcileContext = {
      client: writer,
      cache: (resource) => {
        // A kind read on demand: its writes wait for its cache as much as for the declared ones.
        for (const informer of pool.informers(resource).filter(mine)) fresh.read(informer);
        return this.#reader(resource, pool.cache(resource));
      },
      installed: (resource) => pool.informers(resource).every((i) => i.installed),
      problems: () => problems.get(parent),
      log: this.#log.with({ object: key }),
      events,
      metrics: metrics.registry,
      signal: deadline.signal,
    };
    const visited = (visit: Visit): Visited<T> => ({
      visit,
      object,
      finalizer,
      behind: visit.kind === "failed" && visit.error instanceof StaleCacheError
        ? [visit.error.informer]
        : undefined,
    });
    if (finalizing) return visited(await this.#finalize(key, object, context, client, deadline));
    try {
      return visited(
        await this.#reconcile(parent, key, object, finalizer, context, writer, deadline),
      );
    } catch (error) {
      const cancelled = deadline.signal.aborted && !deadline.expired;
      return visited({ kind: "failed", error, cancelled });
    }
  }

  /**
   * Deletion has started and our finalizer holds the object: the plugin cleans up, then the
   * finalizer goes and the object with it.
   */
  async #finalize(
    key: string,
    object: Stored<T>,
    context: ReconcileContext,
    client: KubeClient,
    deadline: VisitDeadline,
  ): Promise<Visit> {
    const { uid, resourceVersion } = object.metadata;
    const done = this.#finalized.get(key);
    // Woken (say, by a change its own finalize made) before the cache saw the finalizer go: the
    // object is leaving, and finalizing it again would repeat the cleanup.
    if (done?.uid === uid && done?.resourceVersion === resourceVersion) {
      return { kind: "finalized-already" };
    }
    try {
      await this.#runner.finalize(this.#strict(this.plugin.for, object), context, deadline);
      try {
        await setFinalizer(client, this.plugin.for, object, this.plugin, this.#deps.operator, {
          present: false,
          signal: context.signal,
        });
      } catch (error) {
        // Gone already: the finalizer was removed meanwhile (by hand, or by a former leader).
        if (!isApiError(error, 404)) throw error;
      }
      this.#finalized.set(key, { uid, resourceVersion });
      return { kind: "finalized" };
    } catch (error) {
      const cancelled = context.signal.aborted && !deadline.expired;
      return { kind: "finalize-failed", error, cancelled };
    }
  }

  /** The plugin's reconcile, and its Outcome made true. */
  async #reconcile(
    parent: ObjectRef,
    key: string,
    object: Stored<T>,
    finalizer: string | undefined,
    context: ReconcileContext,
    writer: KubeClient,
    deadline: VisitDeadline,
  ): Promise<Visit> {
    const { problems } = this.#deps;
    const { signal, log } = context;
    if (finalizer && !hasFinalizer(object, this.plugin, this.#deps.operator)) {
      // Before anything is made outside Kubernetes, so that nothing can outlive the object.
      await setFinalizer(writer, this.plugin.for, object, this.plugin, this.#deps.operator, {
        present: true,
        signal,
      });
      log.debug("added finalizer {finalizer}", { finalizer });
    }
    const outcome: Outcome =
      (await this.#runner.reconcile(this.#strict(this.plugin.for, object), context, deadline)) ??
        {};
    const applier = this.#applier.using(writer);
    let pausedForMs: number | undefined;
    if (outcome.children) {
      const applied = await applier.applyChildren(object, outcome.children, signal, log);
      problems.set(parent, this.name, applied.problems);
      for (const id of applied.blocked) {
        this.#blocked.set(id, (this.#blocked.get(id) ?? new Set<string>()).add(key));
      }
      pausedForMs = applied.retryInMs;
      const refused = applied.problems.some((p) => p.reason !== "WriteLoopDetected");
      if (refused && pausedForMs === undefined) return { kind: "refused" };
    }
    if (outcome.status) {
      if (this.plugin.writesStatus === false) {
        throw new PermanentError(
          `plugin ${this.name} returned a status but declares writesStatus: false`,
          { reason: "UndeclaredStatus" },
        );
      }
      const status = await applier.applyStatus(object, outcome.status, signal);
      pausedForMs = Math.min(pausedForMs ?? Infinity, status.retryInMs ?? Infinity);
    }
    return {
      kind: "reconciled",
      requeueAfterMs: outcome.requeueAfterMs,
      pausedForMs: Number.isFinite(pausedForMs) ? pausedForMs : undefined,
      returnedChildren: outcome.children !== undefined,
    };
  }

  /** Carries `step` out: the queue, the bookkeeping, the error counts, the log line, the Event. */
  #carryOut(
    step: Step,
    at: { queue: WorkQueue; key: string; parent: ObjectRef; visited: Visited<T> },
  ): void {
    const { queue, key, parent, visited } = at;
    const { metrics, events } = this.#deps;
    if (step.forget) queue.forget(key);
    if (step.forgetRefusals) this.#refusals.forget(key);
    if (step.cleanUp) this.#cleanUp(parent, key);
    let delay: number | undefined;
    const requeue = step.requeue;
    if (requeue && "afterMs" in requeue) queue.addAfter(key, delay = requeue.afterMs);
    else if (requeue && "park" in requeue) this.#park(key, visited.behind ?? []);
    else if (requeue?.backoff === "failure") delay = queue.addRateLimited(key);
    else if (requeue?.backoff === "refusal") queue.addAfter(key, this.#refusals.next(key));
    if (step.errors) {
      const labels = { controller: this.name };
      metrics.reconcileErrors.inc(labels);
      if (step.errors.panic) metrics.reconcilePanics.inc(labels);
      if (step.errors.terminal) metrics.terminalErrors.inc(labels);
    }
    const { visit, object } = visited;
    const error = "error" in visit ? messageOf(visit.error) : undefined;
    if (step.log) {
      const properties = {
        object: key,
        delay: delay === undefined ? undefined : Math.round(delay),
        error,
        finalizer: visited.finalizer,
      };
      const log = this.#log.with({ object: key });
      if (step.log.throttled && "error" in visit) {
        this.#warnings.warn(causeOf(visit.error), step.log.message, properties);
      } else {
        log[step.log.level](step.log.message, properties);
      }
    }
    if (step.event && object) {
      events.record(object, { type: "Warning", ...step.event });
    }
  }

  /**
   * A visit of `key` passed its deadline: counted, and after repeated ones the key is put aside
   * until its object changes (quarantine.ts), with an Event and a condition saying so.
   */
  #timedOut(queue: WorkQueue, key: string, object: T | undefined, error: ReconcileTimeoutError) {
    this.#deps.metrics.reconcileTimeouts.inc({ controller: this.name });
    const verdict = this.#quarantine.timedOut(key, object?.metadata ?? {});
    if (!verdict.quarantined || !object) return;
    queue.forget(key);
    this.#log.error("{object} quarantined after {timeouts} reconciles past their deadline", {
      object: key,
      timeouts: verdict.timeouts,
    });
    this.#conditioned.add(key);
    reportQuarantine(this.#notice(), object, {
      timeouts: verdict.timeouts,
      error: error.message,
    });
  }

  /** A visit of `key` ended in time: a quarantine condition it still carries goes. */
  #finishedInTime(key: string, object: T | undefined) {
    this.#quarantine.finished(key);
    if (object && this.#conditioned.delete(key)) clearQuarantine(this.#notice(), object);
  }

  #notice(): QuarantineNotice {
    const { client, events, operator } = this.#deps;
    return { client, events, log: this.#log, plugin: this.plugin, operator };
  }

  /** The parent is gone: nothing is kept about it any more, and its plugin is told. */
  #cleanUp(parent: ObjectRef, key: string): void {
    this.#deps.problems.forget(parent);
    this.#deps.guard.forget(this.name, parent);
    // Nor is it waiting for anything any more: no backoff kept, no object in its way.
    this.#refusals.forget(key);
    for (const [id, parents] of this.#blocked) {
      if (parents.delete(key) && !parents.size) this.#blocked.delete(id);
    }
    this.#quarantine.release(key);
    this.#conditioned.delete(key);
    try {
      this.#runner.onDeleted({ namespace: parent.namespace, name: parent.name }, {
        log: this.#log,
        metrics: this.#deps.metrics.registry,
      });
    } catch (error) {
      this.#log.error("onDeleted of {object} failed: {error}", { object: key, error });
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
}

/**
 * The queue keys of the objects of `kind` that control `object` (by its controller owner
 * reference, of that kind and API version): a change of a child reconciles its parent.
 */
export function controllerKeys(object: KubeObject, kind: Resource): string[] {
  const namespace = kind.namespaced ? object.metadata?.namespace : undefined;
  return (object.metadata?.ownerReferences ?? [])
    .filter((ref) =>
      ref.controller && ref.kind === kind.kind && ref.apiVersion === apiVersionOf(kind)
    )
    .map((ref) => refKey(ownerRefOf(ref, namespace)));
}

/** What the fence needs of a cache. */
type Freshness = Pick<Informer, "fresh" | "epoch">;

/**
 * The write fence of one reconcile: every cache it read (the declared ones at once, others as
 * they are read) must be fresh and not have fallen behind since, right before each write leaves.
 */
export function freshnessFence(
  declared: Freshness[],
): { fence: () => void; read: (informer: Freshness) => void } {
  const epochs = new Map(declared.map((informer) => [informer, informer.epoch]));
  return {
    read: (informer) => {
      if (!epochs.has(informer)) epochs.set(informer, informer.epoch);
    },
    fence: () => {
      for (const [informer, epoch] of epochs) {
        if (!informer.fresh || informer.epoch !== epoch) {
          throw new StaleCacheError(informer as Informer);
        }
      }
    },
  };
}

/**
 * `/healthz` fails while a controller that should run has stopped (a bug in the machinery, not a
 * plugin's failure): the kubelet restarts the process. `running` says whether they should run
 * (this instance leads).
 */
export function controllerChecks(
  controllers: Pick<Controller, "name" | "failure">[],
  running: () => boolean,
): ProbeChecks {
  return {
    healthz: {
      controllers: () => {
        if (!running()) return undefined;
        const failed = controllers.filter((c) => c.failure);
        return failed.length ? failed.map((c) => `${c.name}: ${c.failure}`).join("; ") : undefined;
      },
    },
  };
}

/** An object's identity at one version. */
function versionOf(object: KubeObject): string {
  return `${object.metadata?.uid}@${object.metadata?.resourceVersion}`;
}
