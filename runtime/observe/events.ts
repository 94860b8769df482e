/**
 * Records Kubernetes Events on the objects the operator acts on, aggregated: a repeat of the same
 * event on the same object bumps its count instead of creating another, and is written at most
 * once per interval, so a failing loop does not flood the API server. Events have a slow lane of
 * their own, so a burst of news never delays the writes that make children exist; and, as
 * client-go's broadcaster, a bounded backlog: past it new Events are dropped, and the log says so
 * (a start over 10,000 objects would otherwise hold 10,000 Events in memory for minutes).
 * Replicas that split the work (shards) split the lane and the backlog too, by the share each
 * holds: three replicas write no more Events than one would (they wrote three times as many).
 */
import type { KubeClient } from "../../kube/client.ts";
import type { KubeObject } from "../../kube/object.ts";
import { isApiError } from "../../kube/errors.ts";
import { EVENT } from "../../kube/kinds.ts";
import { type RateLimit, RateLimiter } from "../../kube/rate_limiter.ts";
import { type CorrelatorOptions, EventCorrelator } from "./event_correlator.ts";
import { NotLeaderError } from "../../kube/write_fence.ts";
import type { Logger } from "./logging.ts";
import { causeOf, WarningThrottle } from "./warning_throttle.ts";

/** One Kubernetes Event about an object. */
export interface EventInput {
  /** `Warning` for what someone should look at. */
  type: "Normal" | "Warning";
  /** Short CamelCase, e.g. `Applied`, `ReconcileFailed`. */
  reason: string;
  /** What happened, in one sentence a person can act on. */
  message: string;
}

/** What plugins record events through. */
export interface EventRecorder {
  /** Records `event` about `object` (aggregated, rate-limited, written in the background). */
  record(object: KubeObject, event: EventInput): void;
}

const AGGREGATION_WINDOW_MS = 10 * 60_000;

interface Aggregate {
  name: string;
  namespace: string;
  /** The object it is about, whose write budget it spends. */
  uid: string;
  count: number;
  /** Count already written. */
  written: number;
  lastWrite: number;
  firstSeen: string;
  timer?: ReturnType<typeof setTimeout>;
}

/** Normal Events about one object and reason, gathered for a moment. */
interface Batch {
  object: KubeObject;
  reason: string;
  /** Each message, with how many times it was recorded: a repeat still counts on the Event. */
  messages: Map<string, number>;
  timer: ReturnType<typeof setTimeout>;
}

/** Events are written in the background; failures are logged, never thrown at the reconciler. */
export class KubeEventRecorder implements EventRecorder {
  readonly #client: KubeClient;
  readonly #component: string;
  readonly #warnings: WarningThrottle;
  readonly #minIntervalMs: number;
  readonly #aggregates = new Map<string, Aggregate>();
  readonly #correlator: EventCorrelator;
  readonly #batchMs: number;
  readonly #batches = new Map<string, Batch>();
  readonly #pending = new Set<Promise<void>>();
  readonly #rate: RateLimit;
  readonly #share: () => number;
  #lane: RateLimiter;
  /** The share the lane was made for. */
  #laneShare = 1;
  readonly #maxBacklog: number;
  /** Aborted when what waits is to be written at once (flush, close). */
  #hurry = new AbortController();
  #closed = false;
  #lastSweep = 0;

  /**
   * `component` names the operator as the Events' source; a repeat of one Event bumps its count at
   * most every `minIntervalMs` (default 10 s).
   */
  constructor(
    client: KubeClient,
    options: {
      component: string;
      log: Logger;
      minIntervalMs?: number;
      /** How long Normal Events about one object and reason are gathered into one; 2 s. */
      batchMs?: number;
      /** The Events' own lane, below the client's limit; 20 per second, 50 at once. */
      rate?: RateLimit;
      correlator?: CorrelatorOptions;
      /** Events waiting for the lane, past which new ones are dropped; 1000 (Warnings: twice). */
      maxBacklog?: number;
      /**
       * The part of the lane and the backlog this process spends, 0 to 1, asked for as it goes:
       * with shards, those held over the ring's size; 1 (all) by default.
       */
      share?: () => number;
    },
  ) {
    this.#maxBacklog = options.maxBacklog ?? 1000;
    this.#rate = options.rate ?? { qps: 20, burst: 50 };
    this.#share = options.share ?? (() => 1);
    this.#lane = new RateLimiter(this.#rate);
    this.#batchMs = options.batchMs ?? 2_000;
    this.#client = client;
    this.#correlator = new EventCorrelator(options.correlator);
    this.#component = options.component;
    this.#warnings = new WarningThrottle(options.log);
    this.#minIntervalMs = options.minIntervalMs ?? 10_000;
  }

  record(object: KubeObject, input: EventInput): void {
    if (this.#closed) return;
    if (input.type !== "Normal" || this.#batchMs <= 0) return this.#record(object, input);
    // Routine news about one object (its children made, by one plugin or several) is told in
    // one Event: gathered for a moment, then written together.
    const key = JSON.stringify([object.metadata?.uid, input.reason]);
    const batch = this.#batches.get(key);
    if (batch) {
      batch.messages.set(input.message, (batch.messages.get(input.message) ?? 0) + 1);
      return;
    }
    this.#batches.set(key, {
      object,
      reason: input.reason,
      messages: new Map([[input.message, 1]]),
      timer: setTimeout(() => this.#release(key), this.#batchMs),
    });
  }

  /** Writes a batch as one Event. */
  #release(key: string): void {
    const batch = this.#batches.get(key);
    if (!batch) return;
    clearTimeout(batch.timer);
    this.#batches.delete(key);
    // Each repeat bumps the count of the one Event, as if recorded apart.
    const message = [...batch.messages.keys()].join("; ");
    for (let i = 0; i < Math.max(...batch.messages.values()); i++) {
      this.#record(batch.object, { type: "Normal", reason: batch.reason, message });
    }
  }

  #record(object: KubeObject, input: EventInput): void {
    const meta = object.metadata ?? {};
    const uid = meta.uid ?? `${meta.namespace}/${meta.name}`;
    const now = Date.now();
    this.#forgetOld(now);
    // Similar events (one object, type and reason) combine once their messages keep changing.
    const message = this.#correlator.message(uid, input.type, input.reason, input.message, now);
    const event = { ...input, message };
    const key = JSON.stringify([uid, event.type, event.reason, event.message]);
    const existing = this.#aggregates.get(key);
    if (existing) {
      existing.count++;
      if (existing.timer) return;
      const wait = existing.lastWrite + this.#minIntervalMs - now;
      existing.timer = setTimeout(() => {
        existing.timer = undefined;
        this.#track(this.#bump(existing));
      }, Math.max(0, wait));
      return;
    }
    // A flood about one object is cut off: a burst of writes, then one per interval.
    if (!this.#correlator.admit(uid, now)) return;
    const limit = Math.ceil(this.#maxBacklog * this.#currentShare()) *
      (input.type === "Warning" ? 2 : 1);
    if (this.#pending.size >= limit) {
      this.#warnings.warn(
        "events backlog",
        "{waiting} Events wait to be written (at most {limit} a second): {type} {reason} on " +
          "{object} and others are dropped",
        {
          waiting: this.#pending.size,
          limit: Math.round(this.#lane.qps * 100) / 100,
          type: event.type,
          reason: event.reason,
          object: `${meta.namespace}/${meta.name}`,
        },
      );
      return;
    }
    const aggregate: Aggregate = {
      name: `${meta.name}.${now.toString(16)}${Math.floor(Math.random() * 0xfff).toString(16)}`,
      namespace: meta.namespace || "default",
      uid,
      count: 1,
      written: 0,
      lastWrite: now,
      firstSeen: new Date(now).toISOString(),
    };
    this.#aggregates.set(key, aggregate);
    // The reference alone waits with it: not a whole object of some older version.
    const involved = {
      apiVersion: object.apiVersion,
      kind: object.kind,
      name: meta.name,
      namespace: meta.namespace,
      uid: meta.uid,
      resourceVersion: meta.resourceVersion,
    };
    this.#track(this.#create(involved, event, aggregate));
  }

  /**
   * Drops aggregates idle for 10 minutes (client-go's window): a repeat after that is a new
   * Event, and a long-running operator does not remember every event it ever recorded.
   */
  #forgetOld(now: number): void {
    if (now - this.#lastSweep < 60_000) return;
    this.#lastSweep = now;
    this.#correlator.sweep(now);
    for (const [key, aggregate] of this.#aggregates) {
      if (!aggregate.timer && now - aggregate.lastWrite > AGGREGATION_WINDOW_MS) {
        this.#aggregates.delete(key);
      }
    }
  }

  /** Writes the batches and counts still waiting now, and waits for every write. */
  async flush(): Promise<void> {
    for (const key of [...this.#batches.keys()]) this.#release(key);
    for (const aggregate of this.#aggregates.values()) {
      if (aggregate.timer) {
        clearTimeout(aggregate.timer);
        aggregate.timer = undefined;
        if (aggregate.count > aggregate.written) this.#track(this.#bump(aggregate));
      }
    }
    const hurry = this.#hurry;
    this.#hurry = new AbortController();
    hurry.abort();
    await Promise.all(this.#pending);
  }

  /** Forgets what is waiting to be written (leadership was lost: it is not ours to write). */
  discard(): void {
    for (const batch of this.#batches.values()) clearTimeout(batch.timer);
    this.#batches.clear();
    for (const aggregate of this.#aggregates.values()) {
      clearTimeout(aggregate.timer);
      aggregate.timer = undefined;
      aggregate.count = aggregate.written;
    }
  }

  /** Writes what is still pending and stops recording. */
  async close(): Promise<void> {
    await this.flush();
    this.#closed = true;
  }

  /** Events are best effort: failures are logged once per cause, refusals by the fence not at all. */
  #failed(error: unknown, message: string, properties: Record<string, unknown>): void {
    if (error instanceof NotLeaderError) return;
    this.#warnings.warn(causeOf(error), message, properties);
  }

  /** Waits for the Events' lane; a flush lets everyone waiting go at once. */
  async #turn(): Promise<void> {
    const share = this.#currentShare();
    if (share !== this.#laneShare) {
      // Those already waiting keep the old lane's pace; it is a moment's difference.
      this.#laneShare = share;
      this.#lane = new RateLimiter({
        qps: this.#rate.qps * share,
        burst: Math.max(1, Math.round(this.#rate.burst * share)),
      });
    }
    await this.#lane.wait(this.#hurry.signal).catch(() => {});
  }

  /**
   * This process's share of the lane. None is taken as a little: a lane needs a rate, and the
   * fence refuses the writes of a replica that holds nothing anyway.
   */
  #currentShare(): number {
    const share = this.#share();
    return Number.isFinite(share) ? Math.min(1, Math.max(0.01, share)) : 1;
  }

  #track(promise: Promise<void>): void {
    this.#pending.add(promise);
    promise.finally(() => this.#pending.delete(promise));
  }

  async #create(
    involvedObject: Record<string, string | undefined>,
    event: EventInput,
    aggregate: Aggregate,
  ): Promise<void> {
    try {
      await this.#turn();
      await this.#client.create(EVENT, {
        metadata: { name: aggregate.name, namespace: aggregate.namespace },
        involvedObject,
        type: event.type,
        reason: event.reason,
        message: event.message.slice(0, 1024),
        source: { component: this.#component },
        reportingComponent: this.#component,
        reportingInstance: this.#component,
        firstTimestamp: aggregate.firstSeen,
        lastTimestamp: aggregate.firstSeen,
        count: 1,
      } as KubeObject);
      aggregate.written = 1;
    } catch (error) {
      this.#failed(error, "could not record event {reason} on {object}: {error}", {
        reason: event.reason,
        object: `${involvedObject.namespace}/${involvedObject.name}`,
        error: (error as Error).message,
      });
    }
  }

  async #bump(aggregate: Aggregate): Promise<void> {
    aggregate.lastWrite = Date.now();
    // Out of budget for this object: the count keeps growing and goes out with a later write.
    if (!this.#correlator.admit(aggregate.uid, aggregate.lastWrite)) return;
    await this.#turn();
    const count = aggregate.count;
    try {
      await this.#client.patch(EVENT, aggregate.name, {
        count,
        lastTimestamp: new Date(aggregate.lastWrite).toISOString(),
      }, { namespace: aggregate.namespace });
      aggregate.written = count;
    } catch (error) {
      if (!isApiError(error, 404)) {
        this.#failed(error, "could not update event {name}: {error}", {
          name: aggregate.name,
          error: (error as Error).message,
        });
      }
    }
  }
}
