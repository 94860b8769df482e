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
 * Reconnect delays for one long-lived connection (a watch): `initial` doubling to `max`, each
 * with up to `jitter` extra, and back to `initial` once a connection stayed healthy for `resetAfter`.
 */
export class ReconnectBackoff {
  #attempt = 0;
  constructor(
    readonly initialMs = 800,
    readonly maxMs = 30_000,
    readonly jitter = 1.0,
    readonly resetAfterMs = 120_000,
    readonly random: () => number = Math.random,
  ) {}

  /** The delay before the next attempt; `healthyForMs` is how long the last connection lasted. */
  next(healthyForMs = 0): number {
    if (healthyForMs >= this.resetAfterMs) this.#attempt = 0;
    const base = Math.min(this.initialMs * 2 ** this.#attempt, this.maxMs);
    this.#attempt++;
    return base * (1 + this.jitter * this.random());
  }

  reset(): void {
    this.#attempt = 0;
  }
}
