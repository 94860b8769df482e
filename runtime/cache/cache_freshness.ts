/**
 * Whether a cache may decide writes: behind from when a watch may have missed changes until it has
 * listed again, counting the falls (what was read at another epoch may be stale).
 */
import { monotonicMs } from "../../util/clock.ts";

/** Why a cache is behind the API server, and since when. */
export interface Behind {
  /** Monotonic milliseconds when it fell behind. */
  since: number;
  /** Why it fell behind (`not listed yet`, a watch's failure), for logs and errors. */
  reason: string;
}

/** A cache's freshness: behind (with why and since when) or fresh, and how often it fell. */
export class CacheFreshness {
  #behind?: Behind;
  #epoch = 0;
  #fresh = Promise.withResolvers<void>();

  /** Starts behind (`reason`), or fresh when no reason is given. */
  constructor(reason?: string) {
    if (reason === undefined) this.#fresh.resolve();
    else this.#behind = { since: monotonicMs(), reason };
  }

  /** Why and since when the cache is behind, or undefined when it is fresh. */
  get behind(): Behind | undefined {
    return this.#behind;
  }

  /** Counts the times the cache fell behind. */
  get epoch(): number {
    return this.#epoch;
  }

  /** Resolves when the cache is fresh (at once if it is). */
  whenFresh(): Promise<void> {
    return this.#fresh.promise;
  }

  /** From now on writes may not be decided from this cache, until it has listed again. */
  fallBehind(reason: string): void {
    // Already behind: the latest reason is the one worth telling.
    if (this.#behind) return void (this.#behind.reason = reason);
    this.#behind = { since: monotonicMs(), reason };
    this.#epoch++;
    this.#fresh = Promise.withResolvers<void>();
  }

  /** The cache matches the server again. */
  catchUp(): void {
    if (!this.#behind) return;
    this.#behind = undefined;
    this.#fresh.resolve();
  }
}
