/**
 * One visit's deadline: the plugin's code (a reconcile or finalize) must settle within it. Past it
 * the visit is abandoned: its signal aborts, its writer refuses every write from then on (so
 * nothing is written for the key after its deadline), and the caller gets a
 * `ReconcileTimeoutError` at once, freeing its worker slot even when the plugin's promise never
 * settles. Controller-runtime's `ReconciliationTimeout` only cancels a context; this also stops
 * waiting, and in a Worker ends the Worker's process (worker_runner.ts).
 */

/** Why a visit was abandoned: it passed its deadline, or its Worker's heap passed its cap. */
export class ReconcileTimeoutError extends Error {
  /** Always `ReconcileTimeoutError`. */
  override readonly name = "ReconcileTimeoutError";
  /** `message` says what passed: the deadline, or the heap cap. */
  constructor(
    message: string,
    /** What ended it: the clock, or (in a Worker) the heap cap. */
    readonly by: "deadline" | "heap",
  ) {
    super(message);
  }
}

/**
 * The plugin's Worker ended because of another call (one that passed its deadline or its heap
 * cap): this one did nothing wrong and is visited again at once, without backoff.
 */
export class WorkerInterruptedError extends Error {
  /** Always `WorkerInterruptedError`. */
  override readonly name = "WorkerInterruptedError";
}

/** The deadline of one visit, linked to the controller's own abort (shutdown, lost leadership). */
export class VisitDeadline {
  /** Milliseconds the plugin's code may take. */
  readonly ms: number;
  readonly #controller = new AbortController();
  readonly #unlinks: (() => void)[] = [];
  #timer?: ReturnType<typeof setTimeout>;
  #expired?: ReconcileTimeoutError;
  #onExpire?: (error: ReconcileTimeoutError) => void;

  /**
   * A deadline of `ms` for one visit whose signal also aborts with `parent`; the clock starts with
   * `race`.
   */
  constructor(ms: number, parent: AbortSignal) {
    this.ms = ms;
    this.follow(parent);
  }

  /** Aborts the visit's signal when `signal` aborts too (its shard lost, say), until `end`. */
  follow(signal: AbortSignal): void {
    const abort = () => this.#controller.abort(signal.reason);
    if (signal.aborted) return abort();
    signal.addEventListener("abort", abort, { once: true });
    this.#unlinks.push(() => signal.removeEventListener("abort", abort));
  }

  /** Aborts on shutdown, lost leadership, or at the deadline. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Why the visit was abandoned, once it was. */
  get expired(): ReconcileTimeoutError | undefined {
    return this.#expired;
  }

  /** A write fence: refuses every write once the visit was abandoned. */
  readonly fence = (): void => {
    if (this.#expired) throw this.#expired;
  };

  /**
   * Starts the clock and waits for `work`, or for the deadline (or `expire`), whichever comes
   * first: then rejects with the ReconcileTimeoutError, and `work` is no longer waited for.
   */
  async race<T>(work: Promise<T>): Promise<T> {
    let reject!: (error: ReconcileTimeoutError) => void;
    const abandoned = new Promise<never>((_, r) => reject = r);
    this.#onExpire = reject;
    if (this.#expired) reject(this.#expired);
    this.#timer ??= setTimeout(
      () =>
        this.expire(
          new ReconcileTimeoutError(
            `did not finish within its deadline of ${formatMs(this.ms)}`,
            "deadline",
          ),
        ),
      this.ms,
    );
    try {
      return await Promise.race([work, abandoned]);
    } finally {
      clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#onExpire = undefined;
    }
  }

  /** Abandons the visit now (its Worker's heap passed the cap, say). */
  expire(error: ReconcileTimeoutError): void {
    if (this.#expired) return;
    this.#expired = error;
    this.#controller.abort(error);
    this.#onExpire?.(error);
  }

  /** The visit is over: stops following the signals it followed. */
  end(): void {
    clearTimeout(this.#timer);
    for (const unlink of this.#unlinks.splice(0)) unlink();
  }
}

/** `1.5 s`, `250 ms`. */
export function formatMs(ms: number): string {
  return ms >= 1000 ? `${Math.round(ms / 100) / 10} s` : `${ms} ms`;
}
