/**
 * Who may reconcile which object now, when replicas split the keys (a ring of shards,
 * runtime/shards/): a visit claims its key's shard, writes through the shard's fence, and stops
 * when the shard is lost.
 */
import type { WriteFence } from "../../kube/write_fence.ts";

/** Who may reconcile which object now, when replicas split the keys. */
export interface KeyClaims {
  /**
   * The right to reconcile the object with `uid` now, or undefined when it is another
   * replica's (or nobody's yet). Released when the visit ends.
   */
  claim(uid: string): KeyClaim | undefined;
}

/** The right to reconcile one key, for the shard it belongs to. */
export interface KeyClaim {
  /** The shard: caches of other shards do not hold this key's world. */
  shard: number;
  /** Every write of the visit passes it (the shard's lease is surely held). */
  fence: WriteFence;
  /** Aborts when the shard is lost (or its hand-over stops waiting). */
  signal: AbortSignal;
  /** Gives the right back once the visit has ended. */
  release(): void;
}
