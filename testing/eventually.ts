/** Retries an assertion until it passes or a deadline expires: for state the cluster converges to. */

export interface EventuallyOptions {
  /** Give up after this long; default 30 s. Generous, since CI machines are shared and slow. */
  timeoutMs?: number;
  /** Pause between attempts; default 100 ms. */
  intervalMs?: number;
}

/**
 * Calls `check` until it returns without throwing, and returns its value. When the deadline
 * passes, rethrows the last failure, so the test shows what was still wrong.
 */
export async function eventually<T>(
  check: () => T | Promise<T>,
  options: EventuallyOptions = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() >= deadline) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 100));
  }
}
