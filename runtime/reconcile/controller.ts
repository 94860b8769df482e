/**
 * Runs one plugin: its changes become queue keys with their causes (change_routes.ts), workers take
 * the keys, a visit looks and writes (visitor.ts), and what happens after it is decided by
 * `nextStep` (next_step.ts) and carried out here: the queue, the bookkeeping, metrics, logs and
 * Events. Each per-key store is a unit of its own (blocked names, finalized versions, parked keys,
 * news of a visit, quarantine).
 */
import type { KubeObject } from "../../kube/object.ts";
import { type ObjectRef, objectRef, parseRefKey, refKey } from "../../kube/object_ref.ts";
import { KeyedBackoff } from "../../util/backoff.ts";
import { nextTurnIfDue } from "../../util/next_turn.ts";
import { causeOf, type Logger, WarningThrottle } from "../observe/mod.ts";
import { ownedKinds, type Plugin } from "../plugin/mod.ts";
import {
  clearQuarantine,
  inProcessRunner,
  type PluginRunner,
  Quarantine,
  type QuarantineNotice,
  ReconcileTimeoutError,
  reportQuarantine,
  VisitDeadline,
  WorkerInterruptedError,
} from "../isolation/mod.ts";
import { Applier } from "./applier.ts";
import { BlockedNames } from "./blocked_names.ts";
import { type Cause, cause } from "./cause.ts";
import { controllerKeys, routeChanges } from "./change_routes.ts";
import { type ControllerDeps, DEFAULT_RECONCILE_TIMEOUT_MS } from "./controller_deps.ts";
import { FinalizedVersions } from "./finalized_versions.ts";
import { messageOf, nextStep, type Step } from "./next_step.ts";
import { ParkedKeys } from "./parked_keys.ts";
import { PluginView } from "./plugin_view.ts";
import { versionOf, VisitNews } from "./visit_news.ts";
import { VisitHistory } from "./visit_history.ts";
import { type VisitEnd, VisitTrace } from "./visit_trace.ts";
import { type Visited, Visitor } from "./visitor.ts";
import { type Taken, WorkQueue } from "./work_queue.ts";
import { Pass } from "./first_pass.ts";

/**
 * Runs one plugin: turns changes into queue keys, visits each key with the plugin's reconcile,
 * writes what it returns, and decides what comes next (see the module doc).
 */
export class Controller<T extends KubeObject = KubeObject> {
  /** The plugin's name. */
  readonly name: string;
  /** The plugin it runs. */
  readonly plugin: Plugin<T>;
  /** Its recent visits, for `explain`. */
  readonly history: VisitHistory;
  readonly #deps: ControllerDeps;
  readonly #log: Logger;
  readonly #warnings: WarningThrottle;
  readonly #visitor: Visitor<T>;
  /** Names taken by objects we do not control, and the parents that want them. */
  readonly #blocked = new BlockedNames();
  /** Delays before looking again at a parent whose children were refused: 30 s doubling to 10 min. */
  readonly #refusals = new KeyedBackoff(30_000, 600_000);
  /** The versions whose finalizer we removed, until the cache has caught up. */
  readonly #finalized = new FinalizedVersions();
  /** Keys put aside until a cache that was behind has listed again. */
  readonly #parked = new ParkedKeys((key) => this.#queue?.add(key, cause("relisted")));
  /** Children that appear while their parent is visited. */
  readonly #news = new VisitNews();
  /** The keys under a bulk visit now. */
  readonly #bulkVisits = new Set<string>();
  /** Where the plugin's code runs. */
  readonly #runner: PluginRunner;
  /** Keys put aside after reconciles that kept passing their deadline. */
  readonly #quarantine = new Quarantine();
  /** Keys whose object carries our quarantine condition, to take it off once a visit works. */
  readonly #conditioned = new Set<string>();
  #queue?: WorkQueue;
  /** Why the controller stopped while it should run, if it did. */
  #failure?: string;
  /** The keys of the pass that began with the last start, not yet visited. */
  #firstPass?: Pass;
  /** Resolves with the first pass once the controller has started. */
  readonly #passStarted: Promise<Pass>;
  #passBegun!: (pass: Pass) => void;

  /** A controller for `plugin`, subscribed to its kinds' changes; nothing is visited until it runs. */
  constructor(plugin: Plugin<T>, deps: ControllerDeps) {
    this.name = plugin.name;
    this.plugin = plugin;
    this.history = new VisitHistory(deps.visitHistory);
    this.#passStarted = new Promise((resolve) => this.#passBegun = resolve);
    this.#deps = deps;
    this.#log = deps.log.with({ controller: plugin.name });
    this.#warnings = new WarningThrottle(this.#log);
    this.#runner = deps.runner ?? inProcessRunner(plugin);
    const owned = ownedKinds(plugin);
    const view = new PluginView(plugin as Plugin, deps.strictReads);
    const applier = new Applier({
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
      created: (parent, child) => this.#made(refKey(parent), child),
      applied: (child) => {
        for (const key of controllerKeys(child, plugin.for)) this.#made(key, child);
      },
      statusWritten: (parent) => {
        const key = this.#keyOf(parent);
        this.#news.made(key, versionOf(parent));
        if (this.#bulkVisits.has(key)) deps.bulkWrites?.wrote(versionOf(parent));
      },
      dryRun: deps.dryRun,
    });
    const related = [
      ...owned.map((o) => o.resource),
      ...(plugin.watches ?? []).map((w) => w.resource),
    ];
    routeChanges(plugin as Plugin, {
      pool: deps.pool,
      runner: this.#runner,
      view,
      problems: deps.problems,
      blocked: this.#blocked,
      news: this.#news,
      bulkWrites: deps.bulkWrites,
      log: this.#log,
    }, {
      enqueue: (key, because) => this.#enqueue(key, because),
      enqueueAll: (because) => this.enqueueAll(because),
      gone: (key) => this.#finalized.forget(key),
    });
    this.#visitor = new Visitor(plugin, {
      operator: deps.operator,
      client: deps.client,
      pool: deps.pool,
      events: deps.events,
      metrics: deps.metrics,
      problems: deps.problems,
      runner: this.#runner,
      applier,
      view,
      blocked: this.#blocked,
      finalized: this.#finalized,
      reads: [plugin.for, ...related].flatMap((resource) => deps.pool.informers(resource)),
      claims: deps.claims,
      dryRun: deps.dryRun,
      log: this.#log,
    });
  }

  /**
   * Resolves once every object cached when the controller last started has been visited (or is
   * gone): one pass over everything, what a dry run waits for.
   */
  get firstPass(): Promise<void> {
    return this.#passStarted.then((pass) => pass.done);
  }

  /**
   * Queues every cached object of the plugin's kind now, as bulk work unless `because` says
   * otherwise: this replica began to lead (`start`), the periodic `resync`, a `shard` taken.
   */
  enqueueAll(because: Cause = cause("start")): void {
    for (const object of this.#deps.pool.cache(this.plugin.for).list()) {
      this.#queue?.add(this.#keyOf(object), because);
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
    const concurrency = this.plugin.concurrency ?? this.#deps.concurrency ?? 1;
    const queue = new WorkQueue({
      observer: metrics.queueObserver(this.name),
      priority: this.#deps.priorityQueue,
      // An eighth of the workers (none of a few: one slow bulk visit must not halve what a
      // backlog has) is kept for edits, so that an edit does not wait for a bulk visit to end;
      // while edits come, an eighth of the workers for bulk work: the backlog's writes in
      // flight are what an edit's own write waits behind in the API server, and fewer of them
      // are each answered sooner, so the backlog drains little slower for it.
      maxBulkInFlight: concurrency - Math.floor(concurrency / 8),
      maxBulkInFlightWhileEditing: Math.max(1, Math.ceil(concurrency / 8)),
    });
    this.#queue = queue;
    metrics.trackQueue(this.name, queue);
    metrics.reconcilePanics.inc({ controller: this.name }, 0);
    metrics.terminalErrors.inc({ controller: this.name }, 0);
    metrics.maxConcurrent.set({ controller: this.name }, concurrency);
    metrics.activeWorkers.set({ controller: this.name }, 0);
    metrics.reconcileErrors.inc({ controller: this.name }, 0);
    metrics.reconcileTimeouts.inc({ controller: this.name }, 0);
    const keys = this.#deps.pool.cache(this.plugin.for).list().map((o) => this.#keyOf(o));
    this.#firstPass = new Pass(keys);
    this.#passBegun(this.#firstPass);
    this.enqueueAll(cause("start"));
    const shutDown = () => queue.shutDown();
    stop.addEventListener("abort", shutDown, { once: true });
    if (stop.aborted) shutDown();
    this.#log.info("started {workers} worker(s)", { workers: concurrency });
    await Promise.all(Array.from({ length: concurrency }, () => this.#worker(queue, abort)));
    stop.removeEventListener("abort", shutDown);
    if (this.#queue === queue) this.#queue = undefined;
    this.#log.info("stopped");
  }

  /** The queue key of an object of the plugin's kind. */
  #keyOf(object: KubeObject): string {
    return refKey(objectRef(this.plugin.for, object));
  }

  /** A change concerns `key`: visit it, after the plugin's debounce. */
  #enqueue(key: string, because: Cause): void {
    const debounce = this.plugin.debounceMs ?? 0;
    if (debounce > 0) this.#queue?.addAfter(key, debounce, because);
    else this.#queue?.add(key, because);
  }

  /** Takes keys until the queue shuts down. An error escaping a reconcile's handling ends it. */
  async #worker(queue: WorkQueue, abort: AbortSignal): Promise<void> {
    for (;;) {
      const taken = await queue.get();
      if (taken === undefined) return;
      const labels = { controller: this.name };
      this.#deps.metrics.activeWorkers.inc(labels);
      try {
        await this.#process(queue, taken, abort);
      } catch (error) {
        // A bug in the machinery, not a plugin's failure (those are caught and retried): say so,
        // and let /healthz fail so the process is restarted.
        this.#failure = `a worker stopped: ${messageOf(error)}`;
        this.#log.error("worker stopped with an error: {error}", { error });
        return;
      } finally {
        this.#deps.metrics.activeWorkers.dec(labels);
        queue.done(taken.key);
      }
      // A visit that wrote nothing never waited for I/O: without a turn of the event loop now and
      // then, a backlog of them would hold the watches' events (the edits made meanwhile) and the
      // timers (the lease's renewal, the probes) until it drained. A queue gone quiet is no
      // backlog: this worker waits for its next key and the loop turns anyway, so a turn given then
      // is two timers' wake-ups for nothing, after every visit of a change that came alone. A key
      // handed to another worker meanwhile is work going on in this same chain, and counts.
      if (!queue.quiet) await nextTurnIfDue();
    }
  }

  /** The visit of `key` wrote `child` as it wanted it (see VisitNews and BulkWrites). */
  #made(key: string, child: KubeObject): void {
    const version = versionOf(child);
    this.#news.made(key, version);
    if (this.#bulkVisits.has(key)) this.#deps.bulkWrites?.wrote(version);
  }

  /** One visit of a key, traced and recorded: look, decide (`nextStep`), carry it out. */
  async #process(queue: WorkQueue, taken: Taken, abort: AbortSignal): Promise<void> {
    const { key } = taken;
    const parent = parseRefKey(key);
    const current = this.#deps.pool.cache(this.plugin.for).get(parent.namespace, parent.name);
    if (this.#quarantine.holds(key, current?.metadata)) return this.#firstPass?.visited(key);
    const trace = new VisitTrace(this.name, taken);
    const ended = await trace.run(() => this.#visitAndCarryOut(queue, taken, parent, trace, abort));
    this.history.add(trace.end(ended));
    this.#firstPass?.visited(key);
    this.#log.debug(
      "visited {object} ({visit}) for {causes}, after {waitedMs} ms in the {priority} lane; " +
        "the visit took {tookMs} ms",
      {
        object: key,
        visit: ended.outcome,
        causes: trace.record.causes.join(", ") || "no cause given",
        priority: taken.priority,
        waitedMs: taken.waitedMs,
        tookMs: Math.round(ended.tookMs),
      },
    );
  }

  async #visitAndCarryOut(
    queue: WorkQueue,
    taken: Taken,
    parent: ObjectRef,
    recorder: VisitTrace,
    abort: AbortSignal,
  ): Promise<VisitEnd> {
    const { key } = taken;
    const started = performance.now();
    const deadline = new VisitDeadline(
      this.plugin.reconcileTimeoutMs ?? this.#deps.reconcileTimeoutMs ??
        DEFAULT_RECONCILE_TIMEOUT_MS,
      abort,
    );
    let visited: Visited<T>;
    this.#news.begin(key);
    const bulk = taken.priority === "bulk";
    const bulkVisitEnded = bulk ? this.#deps.bulkWrites?.visit(key) : undefined;
    if (bulk) this.#bulkVisits.add(key);
    try {
      visited = await this.#visitor.visit(parent, key, deadline, recorder);
    } finally {
      deadline.end();
      bulkVisitEnded?.();
      this.#bulkVisits.delete(key);
      // Children that appeared or changed meanwhile, or its status, other than as it wrote them.
      for (const again of this.#news.end(key)) this.#enqueue(key, again);
    }
    const error = "error" in visited.visit ? visited.visit.error : undefined;
    const outcome = visited.visit.kind;
    // Its Worker was ended by another key's visit: this one did nothing wrong, and goes again.
    if (error instanceof WorkerInterruptedError) {
      queue.add(key, { ...cause("retry"), priority: taken.priority });
      return { outcome, next: "again now (its Worker was restarted)", error, tookMs: 0 };
    }
    const step = nextStep(visited.visit);
    let next = this.#carryOut(step, { queue, taken, parent, visited });
    if (error instanceof ReconcileTimeoutError) {
      if (this.#timedOut(queue, key, visited.object, error)) next = "quarantined until it changes";
    } else if (visited.visit.kind !== "behind") this.#finishedInTime(key, visited.object);
    const tookMs = performance.now() - started;
    if (step.result) {
      const { metrics } = this.#deps;
      metrics.reconcileTotal.inc({ controller: this.name, result: step.result });
      metrics.reconcileTime.observe({ controller: this.name }, tookMs / 1000);
    }
    return { outcome, result: step.result, next, error, tookMs };
  }

  /** Carries `step` out: the queue, the bookkeeping, the error counts, the log line, the Event. */
  #carryOut(
    step: Step,
    at: { queue: WorkQueue; taken: Taken; parent: ObjectRef; visited: Visited<T> },
  ): string | undefined {
    const { queue, taken: { key, priority }, parent, visited } = at;
    const { metrics, events } = this.#deps;
    if (step.forget) queue.forget(key);
    if (step.forgetRefusals) this.#refusals.forget(key);
    if (step.cleanUp) this.#cleanUp(parent, key);
    let delay: number | undefined;
    const requeue = step.requeue;
    // A retry waits in the lane its visit waited in; a visit asked for later is bulk work.
    const retry = { ...cause("retry"), priority };
    let next: string | undefined;
    if (requeue && "afterMs" in requeue) {
      queue.addAfter(key, delay = requeue.afterMs, cause("requeue"));
      next = `again in ${inWords(delay)}`;
    } else if (requeue && "park" in requeue) {
      this.#park(key, visited);
      next = "waits for a cache that fell behind to list again";
    } else if (requeue?.backoff === "failure") {
      delay = queue.addRateLimited(key, retry);
      next = `retry in ${inWords(delay)} (failure ${queue.failures(key)} in a row)`;
    } else if (requeue?.backoff === "refusal") {
      const wait = this.#refusals.next(key);
      queue.addAfter(key, wait, retry);
      next = `look again in ${inWords(wait)}, or when what is in the way changes`;
    }
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
    return next;
  }

  /**
   * A visit of `key` passed its deadline: counted, and after repeated ones the key is put aside
   * until its object changes (quarantine.ts), with an Event and a condition saying so.
   */
  #timedOut(
    queue: WorkQueue,
    key: string,
    object: T | undefined,
    error: ReconcileTimeoutError,
  ): boolean {
    this.#deps.metrics.reconcileTimeouts.inc({ controller: this.name });
    const verdict = this.#quarantine.timedOut(key, object?.metadata ?? {});
    if (!verdict.quarantined || !object) return false;
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
    return true;
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
    this.#blocked.forget(key);
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

  /** Puts `key` aside until every cache its visit found behind has listed again. */
  #park(key: string, visited: Visited<T>): void {
    const behind = visited.behind ?? [];
    this.#log.debug("{object} waits for the cache of {kinds} to list again", {
      object: key,
      kinds: [...new Set(behind.map((i) => i.resource.kind))].join(", "),
    });
    this.#parked.park(key, behind);
  }
}

/** A delay in words: `40 ms`, `30 s`, `10 min`. */
function inWords(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 120_000) return `${Math.round(ms / 100) / 10} s`;
  return `${Math.round(ms / 6_000) / 10} min`;
}
