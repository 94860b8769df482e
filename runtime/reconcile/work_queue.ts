/**
 * The work queue of one controller: keys collapse while waiting, a key is never handed to two
 * workers at once, failures back off per key, and delayed visits keep the earliest time.
 */
import { KeyedBackoff } from "../../util/backoff.ts";

/** What the queue reports, for the `workqueue_*` metrics. Every hook is optional. */
export interface QueueObserver {
  depth?(depth: number): void;
  added?(): void;
  retried?(): void;
  /** Seconds a key waited between being added and handed to a worker. */
  waited?(seconds: number): void;
  /** Seconds a worker held a key. */
  worked?(seconds: number): void;
}

export interface WorkQueueOptions {
  /** First failure delay; default 5 ms. */
  baseDelayMs?: number;
  /** Failure delay cap; default 1000 s. A key failing for good is retried this often. */
  maxDelayMs?: number;
  observer?: QueueObserver;
}

/**
 * Keys are strings (`namespace/name`). Level-based: the queue remembers only *that* a key needs
 * a visit, never why, so ten changes before a worker gets to it make one reconcile.
 */
export class WorkQueue {
  /** Keys waiting for a worker, in order: those from `#head` on (shift() moves them all). */
  readonly #queue: string[] = [];
  #head = 0;
  /** Keys that need a visit: waiting in #queue, or being processed and to be visited again. */
  readonly #dirty = new Map<string, number>();
  readonly #processing = new Map<string, number>();
  readonly #delayed = new Map<string, { at: number; timer: ReturnType<typeof setTimeout> }>();
  readonly #backoff: KeyedBackoff;
  readonly #observer: QueueObserver;
  readonly #waiters: ((key: string | undefined) => void)[] = [];
  #shuttingDown = false;

  constructor(options: WorkQueueOptions = {}) {
    this.#backoff = new KeyedBackoff(options.baseDelayMs ?? 5, options.maxDelayMs ?? 1_000_000);
    this.#observer = options.observer ?? {};
  }

  /** Keys waiting for a worker (not counting delayed or in-flight ones). */
  get length(): number {
    return this.#queue.length - this.#head;
  }

  /** When (ms since epoch) each key now in a worker's hands was handed out. */
  inFlightSince(): number[] {
    return [...this.#processing.values()];
  }

  /** True when nothing waits, runs or is scheduled. */
  get idle(): boolean {
    return !this.length && !this.#processing.size && !this.#delayed.size;
  }

  /** Asks for a visit of `key` now. Collapses with a waiting visit; a key in flight is visited again after. */
  add(key: string): void {
    if (this.#shuttingDown || this.#dirty.has(key)) return;
    this.#observer.added?.();
    this.#dirty.set(key, Date.now());
    if (this.#processing.has(key)) return;
    this.#push(key);
  }

  /** Asks for a visit after `delayMs`; an earlier scheduled visit of the same key wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.#shuttingDown) return;
    if (delayMs <= 0) return this.add(key);
    const at = Date.now() + delayMs;
    const existing = this.#delayed.get(key);
    if (existing && existing.at <= at) return;
    if (existing) clearTimeout(existing.timer);
    const timer = setTimeout(() => {
      this.#delayed.delete(key);
      this.add(key);
    }, delayMs);
    this.#delayed.set(key, { at, timer });
  }

  /** Schedules a retry after the key's next failure delay (5 ms, 10 ms, … 1000 s). */
  addRateLimited(key: string): number {
    const delay = this.#backoff.next(key);
    this.#observer.retried?.();
    this.addAfter(key, delay);
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
  get(): Promise<string | undefined> {
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
    if (this.#dirty.has(key) && !this.#shuttingDown) this.#push(key);
  }

  /** Stops handing out keys: waiting `get()` calls resolve `undefined`, timers are cancelled. */
  shutDown(): void {
    this.#shuttingDown = true;
    for (const { timer } of this.#delayed.values()) clearTimeout(timer);
    this.#delayed.clear();
    this.#queue.length = 0;
    this.#head = 0;
    this.#observer.depth?.(0);
    for (const waiter of this.#waiters.splice(0)) waiter(undefined);
  }

  #push(key: string): void {
    const waiter = this.#waiters.shift();
    if (waiter) {
      waiter(this.#take(key));
      return;
    }
    this.#queue.push(key);
    this.#observer.depth?.(this.length);
  }

  /** The first waiting key; the array is compacted once half of it has been taken. */
  #shift(): string | undefined {
    if (this.#head >= this.#queue.length) return undefined;
    const key = this.#queue[this.#head++];
    if (this.#head * 2 >= this.#queue.length) {
      this.#queue.splice(0, this.#head);
      this.#head = 0;
    }
    return key;
  }

  #take(key: string): string {
    const addedAt = this.#dirty.get(key) ?? Date.now();
    this.#dirty.delete(key);
    this.#processing.set(key, Date.now());
    this.#observer.waited?.((Date.now() - addedAt) / 1000);
    this.#observer.depth?.(this.length);
    return key;
  }
}
