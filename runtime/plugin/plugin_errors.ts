/** The errors a reconcile throws to say whether retrying can help. */

/**
 * A failure that retrying will not fix (e.g. an invalid spec); reported, not retried.
 *
 * @example
 * ```ts
 * import { PermanentError } from "ptemplate-operator/mod.ts";
 *
 * const error = new PermanentError("spec.size must be positive", { reason: "InvalidSpec" });
 * if (error.reason !== "InvalidSpec") throw new Error("the Event's reason");
 * ```
 */
export class PermanentError extends Error {
  /** Always `PermanentError`. */
  override readonly name = "PermanentError";
  /** A short CamelCase reason for the Event. */
  readonly reason: string;
  /** `message` names the field and the fix; `reason` is the Event's (default `ReconcileFailed`). */
  constructor(message: string, options: { reason?: string; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.reason = options.reason ?? "ReconcileFailed";
  }
}

/** A failure worth retrying; the same as throwing any other error, with an optional delay. */
export class TemporaryError extends Error {
  /** Always `TemporaryError`. */
  override readonly name = "TemporaryError";
  /** Retry after this long instead of the usual backoff. */
  readonly retryAfterMs?: number;
  /** `message` says what failed; `retryAfterMs` when to try again. */
  constructor(message: string, options: { retryAfterMs?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.retryAfterMs = options.retryAfterMs;
  }
}
