/**
 * The reconcile core's one decision, as a pure function: from how a visit of a key ended (what
 * the plugin returned and the applier did, or what was thrown) to what happens next: whether the
 * key's backoff starts over, when it is visited again, how it is counted, and what is said about
 * it. controller-runtime makes the same step in its reconcileHandler; the controller only carries
 * it out.
 */
import { isApiError } from "../../kube/errors.ts";
import { NotLeaderError } from "../../kube/write_fence.ts";
import { StaleCacheError } from "../cache/mod.ts";
import { PermanentError, TemporaryError } from "../plugin/mod.ts";

/** How one visit of a key ended. */
export type Visit =
  /** A cache the plugin reads is behind the API server: nothing was decided. */
  | { kind: "behind" }
  /** The object is not in the cache: it is gone. */
  | { kind: "gone" }
  /** Another replica's now (replicas split the keys): this one keeps nothing about it. */
  | { kind: "elsewhere" }
  /** The object is being deleted and holds no finalizer of ours: its children go with it. */
  | { kind: "deleting" }
  /** The plugin reconciled and its Outcome was written (some writes may be paused). */
  | {
    kind: "reconciled";
    /** The plugin's `requeueAfterMs`. */
    requeueAfterMs?: number;
    /** The soonest a write the write-loop guard paused may be tried again. */
    pausedForMs?: number;
    /** Whether the plugin returned children (and took the refusal path for none). */
    returnedChildren: boolean;
  }
  /** Some children were refused (by the API server, or their names are taken); none paused. */
  | { kind: "refused" }
  /** The reconcile threw (or a write it made did). `cancelled`: shutdown or lost leadership. */
  | { kind: "failed"; error: unknown; cancelled: boolean }
  /** Woken before the cache saw our finalizer go: the object is leaving, finalized already. */
  | { kind: "finalized-already" }
  /** `finalize` cleaned up and our finalizer is gone. */
  | { kind: "finalized" }
  /** `finalize` (or removing the finalizer) threw. */
  | { kind: "finalize-failed"; error: unknown; cancelled: boolean };

/** What `controller_runtime_reconcile_total` counts the visit as. */
export type ReconcileResult = "success" | "error" | "requeue" | "requeue_after";

/** What happens after a visit. */
export interface Step {
  /** Reset the key's failure backoff (`queue.forget`). */
  forget?: true;
  /**
   * When to visit again: after `afterMs`; after the key's next failure delay (5 ms doubling to
   * 1000 s) or next refusal delay (30 s doubling to 10 minutes); or once every cache it reads has
   * listed again (`park`). Absent: only when something changes.
   */
  requeue?: { afterMs: number } | { backoff: "failure" | "refusal" } | { park: true };
  /** No child was refused: the refusal delay starts over. */
  forgetRefusals?: true;
  /** The object is gone: drop what is kept about it (problems, write counts, names in its way). */
  cleanUp?: true;
  /** How `controller_runtime_reconcile_total` counts it; a visit that ran nothing is not counted. */
  result?: ReconcileResult;
  /** The error counters it adds to: `…_reconcile_errors_total`, `…_panics_total`, `…_terminal_…`. */
  errors?: { panic: boolean; terminal: boolean };
  /**
   * A log line: its level, and its message (`{object}`, `{delay}` and `{error}` filled in).
   * `throttled`: once per cause per interval (an outage fails every object the same way).
   */
  log?: { level: "debug" | "info" | "warn" | "error"; message: string; throttled?: true };
  /** A Warning Event on the object. */
  event?: { reason: string; message: string };
}

/** The step after `visit`: the whole of the controller's decision, with no I/O. */
export function nextStep(visit: Visit): Step {
  switch (visit.kind) {
    case "behind":
      // Not a failure: no backoff, no error counted, nothing written.
      return { requeue: { park: true } };
    case "gone":
    case "elsewhere":
      // Owner references let the garbage collector remove the children; another replica
      // reconciles what is its own.
      return { forget: true, cleanUp: true };
    case "deleting":
    case "finalized-already":
      return { forget: true };
    case "reconciled": {
      const after = Math.min(visit.requeueAfterMs ?? Infinity, visit.pausedForMs ?? Infinity);
      const requeue = Number.isFinite(after) && after >= 0;
      return {
        forget: true,
        ...(visit.returnedChildren ? { forgetRefusals: true as const } : {}),
        ...(requeue ? { requeue: { afterMs: after } } : {}),
        result: requeue ? "requeue_after" : "success",
      };
    }
    case "refused":
      // Reported already (Events, problems). Looked at again when the parent or the object in
      // the way changes, and besides after a while, slower each time: what refused a child (an
      // admission policy, a quota) may change without telling us.
      return {
        forget: true,
        requeue: { backoff: "refusal" },
        result: "error",
        errors: { panic: false, terminal: false },
      };
    case "failed":
      return failed(visit.error, visit.cancelled);
    case "finalized":
      return {
        forget: true,
        result: "success",
        log: { level: "info", message: "finalized; removed finalizer {finalizer}" },
      };
    case "finalize-failed":
      return finalizeFailed(visit.error, visit.cancelled);
  }
}

function failed(error: unknown, cancelled: boolean): Step {
  if (error instanceof StaleCacheError && !cancelled) {
    // A cache fell behind while this reconcile ran: not a failure; visited again once it listed.
    return { requeue: { park: true }, result: "requeue" };
  }
  const errors = { panic: isBug(error), terminal: error instanceof PermanentError };
  if (error instanceof PermanentError) {
    return {
      forget: true,
      result: "error",
      errors,
      log: {
        level: "error",
        message: "reconcile failed for good (not retried until it changes): {error}",
      },
      event: { reason: error.reason, message: messageOf(error) },
    };
  }
  if (cancelled || error instanceof NotLeaderError) {
    // Leadership ended: the next leader (maybe us again) reconciles everything anew.
    return {
      result: "error",
      errors,
      log: { level: "debug", message: "reconcile cancelled: {error}" },
    };
  }
  const requeue = error instanceof TemporaryError && error.retryAfterMs !== undefined
    ? { afterMs: error.retryAfterMs }
    : { backoff: "failure" as const };
  const line = "reconcile of {object} failed, retrying in {delay} ms: {error}";
  // Conflicts are routine (a newer version exists): they retry quietly.
  if (isConflict(error)) {
    return { requeue, result: "error", errors, log: { level: "debug", message: line } };
  }
  return {
    requeue,
    result: "error",
    errors,
    log: { level: "warn", message: line, throttled: true },
    event: { reason: "ReconcileError", message: messageOf(error) },
  };
}

/**
 * A failure to finalize is retried with backoff whatever its kind (a permanent one would hold the
 * object for ever), and told in a `FinalizeFailed` Event.
 */
function finalizeFailed(error: unknown, cancelled: boolean): Step {
  const errors = { panic: false, terminal: false };
  if (cancelled || error instanceof NotLeaderError) return { result: "error", errors };
  const requeue = { backoff: "failure" as const };
  // Changed meanwhile: look again.
  if (isApiError(error, 409)) return { requeue, result: "error", errors };
  return {
    requeue,
    result: "error",
    errors,
    log: {
      level: "warn",
      message: "finalize of {object} failed, retrying in {delay} ms: {error}",
      throttled: true,
    },
    event: { reason: "FinalizeFailed", message: messageOf(error) },
  };
}

function isConflict(error: unknown): boolean {
  return isApiError(error, 409) || isApiError((error as Error | undefined)?.cause, 409);
}

/** A JavaScript error that only a bug raises: what Go would call a panic. */
function isBug(error: unknown): boolean {
  return error instanceof TypeError || error instanceof ReferenceError ||
    error instanceof RangeError || error instanceof SyntaxError;
}

/** The message of what was thrown. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
