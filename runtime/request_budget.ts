/**
 * A token bucket that never waits: a request either fits the budget now or is not sent. For work
 * a caller we do not trust can cause (admission checks, metrics authentication), so that a flood
 * of callers costs the API server at most `burst` requests at once and `qps` a second after that,
 * apart from the reconcilers' own rate limit, and leaves no queue behind it.
 */
export interface Budget {
  /** Requests per second, sustained. */
  qps: number;
  /** Requests that may go at once after a quiet spell. */
  burst: number;
}

export class RequestBudget {
  readonly qps: number;
  readonly burst: number;
  #tokens: number;
  #refilledAt: number;
  readonly #now: () => number;
  /** Requests the budget let through, and those it turned away, since it was made. */
  spent = 0;
  refused = 0;

  constructor(budget: Budget, now: () => number = () => performance.now()) {
    if (!(budget.qps > 0) || !Number.isFinite(budget.qps)) {
      throw new RangeError(`qps must be a positive number, not ${budget.qps}`);
    }
    if (!Number.isInteger(budget.burst) || budget.burst < 1) {
      throw new RangeError(`burst must be a whole number of at least 1, not ${budget.burst}`);
    }
    this.qps = budget.qps;
    this.burst = budget.burst;
    this.#tokens = budget.burst;
    this.#now = now;
    this.#refilledAt = now();
  }

  /** Takes one request's worth if there is one; false (and nothing taken) if not. */
  tryTake(): boolean {
    const now = this.#now();
    this.#tokens = Math.min(this.burst, this.#tokens + (now - this.#refilledAt) * this.qps / 1000);
    this.#refilledAt = now;
    if (this.#tokens < 1) {
      this.refused++;
      return false;
    }
    this.#tokens -= 1;
    this.spent++;
    return true;
  }

  /** The most requests it can let through in `ms` milliseconds: `burst + qps · ms / 1000`. */
  boundFor(ms: number): number {
    return this.burst + Math.floor(this.qps * ms / 1000);
  }
}
