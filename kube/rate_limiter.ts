/**
 * Bounds the rate of requests a process sends: a token bucket (`qps` refilled per second, at
 * most `burst` saved up), as client-go's `--kube-api-qps`/`--kube-api-burst`, and besides never
 * more than `burst` requests (or `qps`, if larger) in any one-second window, so a loop that goes
 * wrong is slowed to a rate the API server shrugs off, whatever one's reading of "burst".
 * Requests wait their turn in order; urgent ones (lease renewals, which have a deadline to keep)
 * go before the others, but count all the same.
 */
import { sleep } from "../util/sleep.ts";

/** A token bucket: `qps` a second, sustained, and `burst` at once after a quiet spell. */
export interface RateLimit {
  /** Sustained requests per second; may be fractional. */
  qps: number;
  /** Requests that may go at once after a quiet spell; at least 1. */
  burst: number;
}

/** The window in which at most `burst` requests leave, with room for network jitter. */
const WINDOW_MS = 1_050;

interface Waiter {
  go: () => void;
}

/**
 * The client-side rate limit of one client: a token bucket and a one-second window that every
 * request waits on in turn (see the module doc).
 */
export class RateLimiter {
  /** Sustained requests per second. */
  readonly qps: number;
  /** Requests that may go at once after a quiet spell. */
  readonly burst: number;
  /** Requests allowed in any one window. */
  readonly #perWindow: number;
  #tokens: number;
  #refilledAt = performance.now();
  /** When each of the last requests (as many as a window allows) left, oldest first. */
  readonly #sent: number[] = [];
  readonly #urgent: Waiter[] = [];
  readonly #normal: Waiter[] = [];
  #pumping = false;

  /**
   * Refuses a `qps` that is not a positive number and a `burst` that is not a whole number of at
   * least 1.
   */
  constructor(limit: RateLimit) {
    if (!(limit.qps > 0) || !Number.isFinite(limit.qps)) {
      throw new RangeError(`qps must be a positive number, not ${limit.qps}`);
    }
    if (!Number.isInteger(limit.burst) || limit.burst < 1) {
      throw new RangeError(`burst must be a whole number of at least 1, not ${limit.burst}`);
    }
    this.qps = limit.qps;
    this.burst = limit.burst;
    this.#tokens = limit.burst;
    this.#perWindow = Math.max(limit.burst, Math.ceil(limit.qps));
  }

  /**
   * Waits for this request's turn and returns how long it waited, in seconds. An abort ends the
   * wait (it throws the abort's reason) and gives the turn to the next.
   */
  wait(signal?: AbortSignal, options: { urgent?: boolean } = {}): Promise<number> {
    const started = performance.now();
    return new Promise<number>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const lane = options.urgent ? this.#urgent : this.#normal;
      const onAbort = () => {
        const index = lane.indexOf(waiter);
        if (index >= 0) lane.splice(index, 1);
        reject(signal!.reason);
      };
      const waiter: Waiter = {
        go: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve((performance.now() - started) / 1000);
        },
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      lane.push(waiter);
      void this.#pump();
    });
  }

  /**
   * Takes a turn now if one is free and nobody waits for it; false (nothing taken) if not. For
   * work an untrusted caller causes, which must not queue behind, or grow, a line of waiters.
   */
  tryTake(): boolean {
    if (this.#urgent.length || this.#normal.length || this.#delay() > 0) {
      this.refused++;
      return false;
    }
    this.#tokens -= 1;
    this.#sent.push(performance.now());
    if (this.#sent.length > this.#perWindow) this.#sent.shift();
    return true;
  }

  /** Turns `tryTake` did not give, since the limiter was made. */
  refused = 0;

  /** Lets waiters go, urgent ones first, as tokens and the window allow. */
  async #pump(): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      while (this.#urgent.length || this.#normal.length) {
        const delay = this.#delay();
        if (delay > 0) {
          await sleep(delay);
          continue;
        }
        const waiter = this.#urgent.shift() ?? this.#normal.shift()!;
        const now = performance.now();
        this.#tokens -= 1;
        this.#sent.push(now);
        if (this.#sent.length > this.#perWindow) this.#sent.shift();
        waiter.go();
      }
    } finally {
      this.#pumping = false;
    }
  }

  /** Milliseconds until one more request may leave (0: now). */
  #delay(): number {
    const now = performance.now();
    this.#tokens = Math.min(this.burst, this.#tokens + (now - this.#refilledAt) * this.qps / 1000);
    this.#refilledAt = now;
    const forToken = this.#tokens >= 1 ? 0 : (1 - this.#tokens) * 1000 / this.qps;
    const windowFull = this.#sent.length >= this.#perWindow && now - this.#sent[0] < WINDOW_MS;
    const forWindow = windowFull ? this.#sent[0] + WINDOW_MS - now : 0;
    return Math.max(forToken, forWindow);
  }
}
