/**
 * Exponential backoff arithmetic, the one copy: per-key failure delays (the work queue), jittered
 * reconnect delays (watches, leader election) and the client's delay between retries.
 */

/** An exponential delay: `initialMs · 2^attempt`, capped at `maxMs`, jitter included. */
export interface ExponentialBackoff {
  initialMs: number;
  maxMs: number;
  /**
   * How much of the bound jitter may take off (0 to 1): each delay is between `(1 − jitter)` and
   * all of it, so clients that failed together do not retry together.
   */
  jitter: number;
}

/**
 * The delay before retry number `attempt` (0 for the first): at most `initialMs · 2^attempt` and
 * never more than `maxMs`, jitter included, and at least `(1 − jitter)` of that bound.
 */
export function backoffDelayMs(
  attempt: number,
  backoff: ExponentialBackoff,
  random: () => number = Math.random,
): number {
  // 2^attempt overflows to Infinity long after the cap; Math.min handles that.
  const bound = Math.min(backoff.initialMs * 2 ** attempt, backoff.maxMs);
  return bound * (1 - backoff.jitter * random());
}

/**
 * Per-key exponential failure delay, as client-go's ItemExponentialFailureRateLimiter:
 * `base * 2^failures`, capped at `max`; `forget` resets a key after a success.
 */
export class KeyedBackoff {
  readonly #failures = new Map<string, number>();
  constructor(readonly baseMs = 5, readonly maxMs = 1_000_000) {}

  /** Records one more failure of `key` and returns how long to wait before retrying it. */
  next(key: string): number {
    const failures = this.#failures.get(key) ?? 0;
    this.#failures.set(key, failures + 1);
    // 2^failures overflows to Infinity long after the cap; Math.min handles that.
    return Math.min(this.baseMs * 2 ** failures, this.maxMs);
  }

  /** How many failures in a row `key` has had. */
  failures(key: string): number {
    return this.#failures.get(key) ?? 0;
  }

  forget(key: string): void {
    this.#failures.delete(key);
  }
}

/**
 * Reconnect delays for one long-lived connection (a watch), as documented: the n-th delay is at
 * most `initial · 2^n` and never more than `max`, jitter included, and at least half of that
 * bound (the jitter takes up to `jitter` of it off, so clients that failed together do not
 * retry together). Back to `initial` once a connection stayed healthy for `resetAfter`.
 * client-go adds its jitter on top of the cap, which doubles the longest wait (to 60 s): a cache
 * that waits that long after the network returns is a cache the runtime cannot use for as long.
 */
export class ReconnectBackoff {
  #attempt = 0;
  constructor(
    readonly initialMs = 800,
    readonly maxMs = 30_000,
    readonly jitter = 0.5,
    readonly resetAfterMs = 120_000,
    readonly random: () => number = Math.random,
  ) {}

  /** The delay before the next attempt; `healthyForMs` is how long the last connection lasted. */
  next(healthyForMs = 0): number {
    if (healthyForMs >= this.resetAfterMs) this.#attempt = 0;
    const { initialMs, maxMs, jitter } = this;
    return backoffDelayMs(this.#attempt++, { initialMs, maxMs, jitter }, this.random);
  }

  reset(): void {
    this.#attempt = 0;
  }
}
