/**
 * Why a key is visited: the changes (or the lack of one) that put it on the queue. The queue keeps
 * them per key until a worker takes it, so a visit knows every event folded into it; they decide
 * its priority (a person's edit or a real change goes before bulk work) and say, in traces and
 * `explain`, why a reconcile ran.
 */

/**
 * What happened:
 * - `created`, `updated`, `deleted`: the object itself (`change` says what of it: spec,
 *   metadata, status, deletion);
 * - `child`: an object it controls was created, changed or deleted;
 * - `watched`: an object a plugin watches, mapped to it;
 * - `unblocked`: an object that held a name it wants changed or went;
 * - `problem`: another plugin could not write one of its children;
 * - `relisted`: a cache it waited for listed again;
 * - `retry`: its last visit failed, and the backoff ran out;
 * - bulk work: `start` (this replica began to lead, or started), `resync` (the periodic look at
 *   everything), `shard` (a shard moved to this replica), `kind` (a kind it reads appeared or
 *   went), `requeue` (its last visit asked to be visited again later).
 */
export type CauseKind =
  | "created"
  | "updated"
  | "deleted"
  | "child"
  | "watched"
  | "unblocked"
  | "problem"
  | "relisted"
  | "retry"
  | "start"
  | "resync"
  | "shard"
  | "kind"
  | "requeue";

/** One reason for a visit. */
export interface Cause {
  /** What happened: a watched change, a retry, a start, a resync, a requeue, … */
  kind: CauseKind;
  /** The object that changed, as `Kind namespace/name`, when one did. */
  object?: string;
  /**
   * What of it changed: `spec`, `metadata`, `status`, `created`, `deleted`, `deletion`; `meanwhile`
   * for children that appeared or changed during its last visit, other than as the visit wrote them.
   */
  change?: string;
  /** When it was seen (ms since the epoch). */
  at: number;
  /** The lane it puts its key in, when not the one its kind says (a retry keeps its visit's). */
  priority?: Priority;
  /** How many times the same change was seen before the visit (a watch says it twice, say). */
  times?: number;
}

/**
 * Which lane a visit waits in: `edit` for what a person or a real change asked for, `bulk` for
 * the work that comes in thousands at once (a start, a resync, a shard moving, requeues).
 */
export type Priority = "edit" | "bulk";

const BULK = new Set<CauseKind>(["start", "resync", "shard", "kind", "requeue"]);

/** The lane a cause puts its key in. */
export function priorityOf(cause: Pick<Cause, "kind" | "priority">): Priority {
  return cause.priority ?? (BULK.has(cause.kind) ? "bulk" : "edit");
}

/** A cause now. */
export function cause(kind: CauseKind, about: Omit<Cause, "kind" | "at"> = {}): Cause {
  return { kind, ...about, at: Date.now() };
}

/** Causes one key keeps: the first of a burst say most; the rest are counted. */
export const MAX_CAUSES = 16;

/** The causes of one pending visit: the first `MAX_CAUSES`, and how many more there were. */
export interface Causes {
  /** The first `MAX_CAUSES` distinct causes, in the order they came (repeats in `times`). */
  list: Cause[];
  /** Causes seen beyond the list. */
  more: number;
}

/**
 * Adds `next` to `causes` (a new list when undefined), keeping it bounded: the same change seen
 * again (kind, object and what changed) counts on the one already listed.
 */
export function withCause(causes: Causes | undefined, next: Cause): Causes {
  const out = causes ?? { list: [], more: 0 };
  const same = out.list.findIndex((c) =>
    c.kind === next.kind && c.object === next.object && c.change === next.change
  );
  if (same >= 0) {
    const seen = out.list[same];
    out.list[same] = { ...seen, times: (seen.times ?? 1) + (next.times ?? 1) };
  } else if (out.list.length < MAX_CAUSES) out.list.push(next);
  else out.more++;
  return out;
}
