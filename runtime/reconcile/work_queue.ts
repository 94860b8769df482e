/**
 * The work queue of one controller: keys collapse while waiting, a key is never handed to two
 * workers at once, failures back off per key, delayed visits keep the earliest time, and edits go
 * first: a key waits in the `edit` lane or the `bulk` lane (`cause.ts`), and bulk work (a start, a
 * resync, a shard moving, requeues) never holds up what a person or a real change asked for, yet
 * is never starved (one bulk key after every `EDITS_PER_BULK` edits while both wait).
 */
import { KeyedBackoff } from "../../util/backoff.ts";
import { type Cause, type Causes, type Priority, priorityOf, withCause } from "./cause.ts";

/** What the queue reports, for the `workqueue_*` metrics. Every hook is optional. */
export interface QueueObserver {
  /** Keys waiting in the lane `priority` now. */
  depth?(depth: number, priority: Priority): void;
  /** A key not yet waiting was added to the lane `priority` (adds that collapse are not told). */
  added?(priority: Priority): void;
  /** A failed key was scheduled again, after its backoff (`addRateLimited`). */
  retried?(): void;
  /** Seconds a key waited between being added and handed to a worker. */
  waited?(seconds: number, priority: Priority): void;
  /** Seconds a worker held a key. */
  worked?(seconds: number): void;
}

/** How a queue backs off failures, whom it reports to, and whether edits go first. */
export interface WorkQueueOptions {
  /** First failure delay; default 5 ms. */
  baseDelayMs?: number;
  /** Failure delay cap; default 1000 s. A key failing for good is retried this often. */
  maxDelayMs?: number;
  /** Told of depths, adds, retries and waits (the `workqueue_*` metrics); none by default. */
  observer?: QueueObserver;
  /**
   * Edits before bulk work (default true). False makes it one first-come-first-served line, as a
   * queue without priorities is: for comparing the two (bench:scale), or to rule this out.
   */
  priority?: boolean;
  /**
   * Bulk keys in workers' hands at once, always; unbounded by default. Below the number of
   * workers, it keeps the rest free for edits: the first edit during a backlog finds a worker at
   * once instead of waiting for a bulk visit to end, which at a takeover writes in a busy API
   * server.
   */
  maxBulkInFlight?: number;
  /**
   * Bulk keys in workers' hands at once while edits come (one was added within
   * `EDITS_RECENT_MS`); unbounded by default. Bulk visits write too, and a backlog's writes in
   * flight are what an edit's own write waits behind in the API server; when edits stop, bulk work
   * takes every worker again.
   */
  maxBulkInFlightWhileEditing?: number;
}

/** How long after an edit was added bulk work keeps to `maxBulkInFlightWhileEditing`. */
export const EDITS_RECENT_MS = 2_000;

/** A key handed to a worker, with why it was added. */
export interface Taken {
  /** The key, as it was added. */
  key: string;
  /** The lane it waited in: a retry of it keeps it. */
  priority: Priority;
  /** Every cause folded into this visit (the first ones, and how many more). */
  causes: Causes;
  /** Milliseconds it waited since it was first added. */
  waitedMs: number;
}

/** Edits handed out in a row, while bulk keys wait, before one bulk key goes. */
export const EDITS_PER_BULK = 7;

/** One lane: keys in order (those from `head` on), some of which may have moved lanes since. */
interface Lane {
  keys: string[];
  head: number;
  /** Keys waiting in it now. */
  size: number;
}

/**
 * Keys are strings (`namespace/name`). Level-based: however many changes come before a worker
 * gets to a key, they make one reconcile, which is told every cause (the first ones, bounded).
 */
export class WorkQueue {
  readonly #lanes: Record<Priority, Lane> = {
    edit: { keys: [], head: 0, size: 0 },
    bulk: { keys: [], head: 0, size: 0 },
  };
  /** Keys that need a visit: waiting in a lane, or being processed and to be visited again. */
  readonly #dirty = new Map<string, { since: number; priority: Priority; causes?: Causes }>();
  /** Which lane a waiting key is in now (a key moves up when an edit comes for it). */
  readonly #waiting = new Map<string, Priority>();
  readonly #processing = new Map<string, number>();
  readonly #delayed = new Map<
    string,
    { at: number; timer: ReturnType<typeof setTimeout>; causes?: Causes }
  >();
  readonly #backoff: KeyedBackoff;
  readonly #observer: QueueObserver;
  readonly #waiters: ((taken: Taken | undefined) => void)[] = [];
  readonly #priority: boolean;
  readonly #maxBulk: number;
  readonly #maxBulkWhileEditing: number;
  /** Bulk keys in workers' hands now. */
  readonly #bulkInFlight = new Set<string>();
  /** When an edit was last added (ms since the epoch). */
  #editAddedAt = -Infinity;
  /** Edits handed out since the last bulk key, while bulk keys waited. */
  #editsInARow = 0;
  #shuttingDown = false;

  /** An empty queue; a failing key waits 5 ms, doubling to 1000 s, unless told otherwise. */
  constructor(options: WorkQueueOptions = {}) {
    this.#backoff = new KeyedBackoff(options.baseDelayMs ?? 5, options.maxDelayMs ?? 1_000_000);
    this.#observer = options.observer ?? {};
    this.#priority = options.priority ?? true;
    this.#maxBulk = options.maxBulkInFlight ?? Infinity;
    this.#maxBulkWhileEditing = options.maxBulkInFlightWhileEditing ?? Infinity;
  }

  /** Keys waiting for a worker (not counting delayed or in-flight ones). */
  get length(): number {
    return this.#lanes.edit.size + this.#lanes.bulk.size;
  }

  /** Keys waiting for a worker in one lane. */
  depth(priority: Priority): number {
    return this.#lanes[priority].size;
  }

  /** When (ms since epoch) each key now in a worker's hands was handed out. */
  inFlightSince(): number[] {
    return [...this.#processing.values()];
  }

  /**
   * True when no key waits for a worker and none is in a worker's hands: a worker that asks now
   * waits for the next add (a delayed key comes on a timer of its own).
   */
  get quiet(): boolean {
    return !this.length && !this.#processing.size;
  }

  /** True when nothing waits, runs or is scheduled. */
  get idle(): boolean {
    return !this.length && !this.#processing.size && !this.#delayed.size;
  }

  /**
   * Asks for a visit of `key` now, for `cause` (default: an edit with no more said), in the lane
   * the cause says. Collapses with a waiting visit (which moves up to the edit lane if this is an
   * edit); a key in flight is visited again after.
   */
  add(key: string, cause?: Cause): void {
    this.#add(key, cause ? { list: [cause], more: 0 } : undefined);
  }

  /** One visit for every cause in `causes` (none: an edit with no more said). */
  #add(key: string, causes: Causes | undefined): void {
    if (this.#shuttingDown) return;
    const edit = !this.#priority || !causes || causes.list.some((c) => priorityOf(c) === "edit");
    const lane: Priority = edit ? "edit" : "bulk";
    if (edit) this.#editAddedAt = Date.now();
    const dirty = this.#dirty.get(key);
    if (dirty) {
      for (const one of causes?.list ?? []) dirty.causes = withCause(dirty.causes, one);
      if (dirty.causes && causes?.more) dirty.causes.more += causes.more;
      if (lane === "edit" && dirty.priority === "bulk") {
        // Its wait in the edit lane starts now: the edit came now, whatever waited before it.
        dirty.priority = "edit";
        dirty.since = Date.now();
        if (this.#waiting.get(key) === "bulk") this.#move(key);
      }
      return;
    }
    this.#observer.added?.(lane);
    this.#dirty.set(key, { since: Date.now(), priority: lane, causes });
    if (this.#processing.has(key)) return;
    this.#push(key, lane);
  }

  /**
   * Asks for a visit after `delayMs`, for `cause`; an earlier scheduled visit of the same key
   * wins (the cause of a later one is then still told, with the earlier visit).
   */
  addAfter(key: string, delayMs: number, cause?: Cause): void {
    if (this.#shuttingDown) return;
    if (delayMs <= 0) return this.add(key, cause);
    const at = Date.now() + delayMs;
    const existing = this.#delayed.get(key);
    // The earlier visit carries this cause too.
    const causes = cause ? withCause(existing?.causes, cause) : existing?.causes;
    if (existing && existing.at <= at) {
      existing.causes = causes;
      return;
    }
    if (existing) clearTimeout(existing.timer);
    const timer = setTimeout(() => {
      const delayed = this.#delayed.get(key);
      this.#delayed.delete(key);
      this.#add(key, delayed?.causes);
    }, delayMs);
    this.#delayed.set(key, { at, timer, causes });
  }

  /**
   * Schedules a retry after the key's next failure delay (5 ms, 10 ms, … 1000 s), for `cause`
   * (give it the failed visit's priority: a retry keeps its lane).
   */
  addRateLimited(key: string, cause?: Cause): number {
    const delay = this.#backoff.next(key);
    this.#observer.retried?.();
    this.addAfter(key, delay, cause);
    return delay;
  }

  /** Resets the failure count of `key` (after a success). */
  forget(key: string): void {
    this.#backoff.forget(key);
  }

  /** How many failures in a row `key` has had. */
  failures(key: string): number {
    return this.#backoff.failures(key);
  }

  /**
   * The next key to process, waiting until there is one. Resolves `undefined` once the queue
   * shuts down. The caller must call `done(key)` when finished.
   */
  get(): Promise<Taken | undefined> {
    const key = this.#shift();
    if (key !== undefined) return Promise.resolve(this.#take(key));
    if (this.#shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Marks `key` finished; if it was added meanwhile, it waits for a worker again. */
  done(key: string): void {
    const started = this.#processing.get(key);
    if (started === undefined) return;
    this.#processing.delete(key);
    this.#observer.worked?.((Date.now() - started) / 1000);
    const dirty = this.#dirty.get(key);
    if (dirty && !this.#shuttingDown) this.#push(key, dirty.priority);
    // A bulk key's worker is free: a bulk key held back may go now.
    if (this.#bulkInFlight.delete(key)) this.#serve();
  }

  /** Stops handing out keys: waiting `get()` calls resolve `undefined`, timers are cancelled. */
  shutDown(): void {
    this.#shuttingDown = true;
    for (const { timer } of this.#delayed.values()) clearTimeout(timer);
    this.#delayed.clear();
    for (const [priority, lane] of Object.entries(this.#lanes) as [Priority, Lane][]) {
      lane.keys.length = 0;
      lane.head = 0;
      lane.size = 0;
      this.#observer.depth?.(0, priority);
    }
    this.#waiting.clear();
    for (const waiter of this.#waiters.splice(0)) waiter(undefined);
  }

  #push(key: string, priority: Priority): void {
    const lane = this.#lanes[priority];
    lane.keys.push(key);
    lane.size++;
    this.#waiting.set(key, priority);
    this.#observer.depth?.(lane.size, priority);
    this.#serve();
  }

  /** Hands waiting workers the keys that may go now. */
  #serve(): void {
    while (this.#waiters.length > 0 && !this.#shuttingDown) {
      const key = this.#shift();
      if (key === undefined) return;
      this.#waiters.shift()!(this.#take(key));
    }
  }

  /** Whether a bulk key may go to a worker now (see `maxBulkInFlight…`). */
  get #bulkMayGo(): boolean {
    const inFlight = this.#bulkInFlight.size;
    return inFlight < this.#maxBulk &&
      (inFlight < this.#maxBulkWhileEditing || Date.now() - this.#editAddedAt >= EDITS_RECENT_MS);
  }

  /** A waiting bulk key an edit came for: to the end of the edit lane (its old place is skipped). */
  #move(key: string): void {
    const bulk = this.#lanes.bulk;
    bulk.size--;
    this.#observer.depth?.(bulk.size, "bulk");
    this.#waiting.delete(key);
    this.#push(key, "edit");
  }

  /** The next key: an edit, unless bulk keys have waited through `EDITS_PER_BULK` edits. */
  #shift(): string | undefined {
    const { edit, bulk } = this.#lanes;
    const bulkTurn = bulk.size > 0 && (edit.size === 0 || this.#editsInARow >= EDITS_PER_BULK) &&
      this.#bulkMayGo;
    if (bulkTurn) {
      this.#editsInARow = 0;
      return this.#shiftFrom("bulk");
    }
    if (edit.size === 0) return undefined;
    if (bulk.size > 0) this.#editsInARow++;
    return this.#shiftFrom("edit");
  }

  /** The first key still waiting in `priority`'s lane; the array is compacted as it empties. */
  #shiftFrom(priority: Priority): string | undefined {
    const lane = this.#lanes[priority];
    while (lane.head < lane.keys.length) {
      const key = lane.keys[lane.head++];
      if (lane.head * 2 >= lane.keys.length) {
        lane.keys.splice(0, lane.head);
        lane.head = 0;
      }
      // A key that moved up to the edit lane left its old place behind.
      if (this.#waiting.get(key) !== priority) continue;
      this.#waiting.delete(key);
      lane.size--;
      return key;
    }
    return undefined;
  }

  #take(key: string): Taken {
    const now = Date.now();
    const dirty = this.#dirty.get(key);
    this.#dirty.delete(key);
    this.#processing.set(key, now);
    const priority = dirty?.priority ?? "edit";
    if (priority === "bulk") this.#bulkInFlight.add(key);
    const waitedMs = now - (dirty?.since ?? now);
    this.#observer.waited?.(waitedMs / 1000, priority);
    this.#observer.depth?.(this.#lanes[priority].size, priority);
    return { key, priority, causes: dirty?.causes ?? { list: [], more: 0 }, waitedMs };
  }
}
