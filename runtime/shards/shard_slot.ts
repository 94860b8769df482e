/**
 * One shard as this replica holds it (or not): its lease's elector, the claims it gives while
 * serving, and the drain that waits for them before the shard is handed on.
 */
import { NotLeaderError, type WriteFence } from "../../kube/write_fence.ts";
import type { LeaderElector } from "../leader/mod.ts";
import type { Logger } from "../observe/mod.ts";

/** The right to reconcile one key now, for the shard it hashes to. */
export interface ShardClaim {
  shard: number;
  /** Passes writes only while the shard's lease is surely held (the leader's fence, per shard). */
  fence: WriteFence;
  /** Aborts when the shard is lost, or its hand-over stops waiting for this reconcile. */
  signal: AbortSignal;
  /** The reconcile is over (a hand-over waits for every claim to be released). */
  release(): void;
}

/** One shard of the ring on this replica. */
export class ShardSlot {
  /** Claims are given: the lease is held and no hand-over has begun. */
  #serving = false;
  /** Aborts this term's claims (lost, or a drain out of time). */
  #term = new AbortController();
  #inFlight = 0;
  /** Told when `#inFlight` comes down to 0. */
  #drained?: () => void;

  constructor(readonly index: number, readonly elector: LeaderElector) {}

  /** The right to reconcile a key of this shard now; undefined unless serving. */
  claim(): ShardClaim | undefined {
    if (!this.#serving || !this.elector.isLeader) return undefined;
    this.#inFlight++;
    let released = false;
    return {
      shard: this.index,
      fence: this.elector.fence,
      signal: this.#term.signal,
      release: () => {
        if (released) return;
        released = true;
        if (--this.#inFlight === 0) this.#drained?.();
      },
    };
  }

  /** The lease was taken: a new term begins, and claims are given. */
  serve(): void {
    this.#term = new AbortController();
    this.#serving = true;
  }

  /**
   * No more claims. Lost: the claims in flight are cancelled at once. Otherwise they drain, and are
   * cancelled only if still running after `drainMs`.
   */
  async drain(
    reason: "lost" | "shutdown" | "handover",
    drainMs: number,
    log: Logger,
  ): Promise<void> {
    this.#serving = false;
    if (reason === "lost") this.#term.abort(new NotLeaderError(`lost shard ${this.index}`));
    if (this.#inFlight === 0) return;
    const drained = new Promise<void>((resolve) => this.#drained = resolve);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<"late">((resolve) => timer = setTimeout(resolve, drainMs, "late"));
    if (await Promise.race([drained, late]) === "late") {
      log.warn("shard {shard}: reconciles still running after {seconds} s; cancelling them", {
        shard: this.index,
        seconds: drainMs / 1000,
      });
      this.#term.abort(new NotLeaderError(`shard ${this.index} handed over`));
    }
    clearTimeout(timer);
    this.#drained = undefined;
  }
}
