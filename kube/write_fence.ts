/**
 * The write fence: a check every write request passes right before it leaves, so that nothing is
 * sent once the sender may no longer write (a leader that may have lost its lease, a reconcile
 * whose caches fell behind). The fence lives here, beside the client that calls it; what shuts it
 * is the business of whoever hands out a fenced client.
 */

/**
 * Decides whether a write may be sent now: throws to refuse it, or returns how many milliseconds
 * it may still take (it is abandoned after that). Called right before every attempt of every
 * write request, after any wait.
 */
export type WriteFence = () => number | void;

/** A write refused because this instance is not (or no longer surely) the leader. */
export class NotLeaderError extends Error {
  /** Always `NotLeaderError`. */
  override readonly name = "NotLeaderError";
}

/** Both fences, `outer` first; the tighter deadline wins. */
export function bothFences(outer: WriteFence | undefined, inner: WriteFence): WriteFence {
  if (!outer) return inner;
  return () => {
    const first = outer();
    const second = inner();
    if (typeof first !== "number") return second;
    return typeof second === "number" ? Math.min(first, second) : first;
  };
}
