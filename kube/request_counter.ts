/** Counts a client's requests by method, code and host, and its waits for the rate limiter. */

/** Request counts by method and code (and host), as `rest_client_requests_total` reports them. */
export class RequestCounter {
  readonly #counts = new Map<string, number>();
  readonly #waitListeners = new Set<
    (sample: { verb: string; host: string; seconds: number }) => void
  >();

  /** Told how long each request waited for the rate limiter (`rest_client_rate_limiter_duration_seconds`). */
  onRateLimiterWait(
    listener: (sample: { verb: string; host: string; seconds: number }) => void,
  ): void {
    this.#waitListeners.add(listener);
  }

  /** Tells the `onRateLimiterWait` listeners how long one request waited. */
  recordWait(sample: { verb: string; host: string; seconds: number }): void {
    for (const listener of this.#waitListeners) listener(sample);
  }

  /** Counts one HTTP answer (`code` 0: none came). */
  record(sample: { method: string; code: number; host: string }): void {
    const key = JSON.stringify([sample.code, sample.method, sample.host]);
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
  }

  /** Every (code, method, host) seen with its count. */
  samples(): { code: number; method: string; host: string; count: number }[] {
    return [...this.#counts].map(([key, count]) => {
      const [code, method, host] = JSON.parse(key);
      return { code, method, host, count };
    });
  }

  /** How many requests used `method` (any code); handy for "no writes happened" checks. */
  total(method?: string): number {
    return this.samples()
      .filter((s) => method === undefined || s.method === method)
      .reduce((sum, s) => sum + s.count, 0);
  }
}
