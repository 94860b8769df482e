/** Exponential backoff arithmetic: per-key failure delays and jittered reconnect delays. */

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
    const bound = Math.min(this.initialMs * 2 ** this.#attempt, this.maxMs);
    this.#attempt++;
    return bound * (1 - this.jitter * this.random());
  }

  reset(): void {
    this.#attempt = 0;
  }
}
