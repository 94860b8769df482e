/**
 * Catches write loops: when one child (or the status) of one parent is written again and again
 * while the parent's generation stays the same, the writes stop for a while, for longer each time
 * it recurs, instead of hammering the API server. A non-idempotent plugin (a timestamp in a
 * child) or two writers fighting over a field are caught within a second or so.
 */
import { type ObjectRef, refKey } from "../../kube/object_ref.ts";
import { monotonicMs } from "../../util/clock.ts";

/** One thing written again and again: a child of a parent (or its status), by one plugin. */
export interface WriteTarget {
  /** The plugin that writes it (one guard serves every plugin). */
  writer: string;
  /** The parent whose child (or status) is written. */
  parent: ObjectRef;
  /** The child written; absent for the parent's status. */
  child?: ObjectRef;
}

/** When rewrites of one child (or status) count as a loop, and how long it pauses. */
export interface WriteLoopGuardOptions {
  /**
   * Writes of one key allowed within `windowMs` while its parent's generation does not change;
   * default 10. A legitimate burst (a status following a rollout) stays below it when status
   * changes are coalesced; a loop passes it within a second.
   */
  maxWrites?: number;
  /** Default 10 s. */
  windowMs?: number;
  /** The first pause once a loop is seen; it doubles each time the loop comes back. Default 30 s. */
  backoffMs?: number;
  /** The longest pause; default 10 minutes. */
  maxBackoffMs?: number;
}

/** Whether a write may go out now. */
export type WriteVerdict =
  | { allowed: true }
  | {
    allowed: false;
    /** When to try again. */
    retryInMs: number;
    /** True for the write that revealed the loop (report it once, not on every refusal). */
    detected: boolean;
    /** How many writes the window held. */
    writes: number;
  };

interface Entry {
  generation?: number;
  writes: number[];
  blockedUntil?: number;
  loops: number;
  lastWriteAt: number;
}

/** Stops writes that loop (see the module doc): one guard serves every plugin of a manager. */
export class WriteLoopGuard {
  readonly #maxWrites: number;
  readonly #windowMs: number;
  readonly #backoffMs: number;
  readonly #maxBackoffMs: number;
  /** By writer and parent (`refKey`), then by child (`refKey`, or "status"). */
  readonly #entries = new Map<string, Map<string, Entry>>();
  #lastSweep = monotonicMs();

  /** A guard with no writes seen; unset options keep the defaults. */
  constructor(options: WriteLoopGuardOptions = {}) {
    this.#maxWrites = options.maxWrites ?? 10;
    this.#windowMs = options.windowMs ?? 10_000;
    this.#backoffMs = options.backoffMs ?? 30_000;
    this.#maxBackoffMs = options.maxBackoffMs ?? 600_000;
  }

  /** How many children (and statuses) the guard remembers writes of. */
  get size(): number {
    let size = 0;
    for (const children of this.#entries.values()) size += children.size;
    return size;
  }

  /** Asks before writing `target` for a parent at `generation`. */
  check(target: WriteTarget, generation: number | undefined): WriteVerdict {
    const entry = this.#parent(target)?.get(childKey(target));
    if (!entry || entry.generation !== generation) return { allowed: true };
    const now = monotonicMs();
    if (entry.blockedUntil !== undefined && now < entry.blockedUntil) {
      return {
        allowed: false,
        retryInMs: entry.blockedUntil - now,
        detected: false,
        writes: entry.writes.length,
      };
    }
    entry.writes = entry.writes.filter((t) => now - t < this.#windowMs);
    if (entry.writes.length < this.#maxWrites) return { allowed: true };
    const writes = entry.writes.length;
    const backoff = Math.min(this.#backoffMs * 2 ** entry.loops, this.#maxBackoffMs);
    entry.loops++;
    entry.blockedUntil = now + backoff;
    entry.writes = [];
    return { allowed: false, retryInMs: backoff, detected: true, writes };
  }

  /** Records a write of `target` that went out. */
  record(target: WriteTarget, generation: number | undefined): void {
    const now = monotonicMs();
    if (now - this.#lastSweep > this.#windowMs) this.#sweep(now);
    const key = childKey(target);
    let writes = this.#parent(target);
    if (!writes) this.#entries.set(parentKey(target), writes = new Map());
    let entry = writes.get(key);
    // A new generation is a new request from the user: earlier writes say nothing about it. A
    // key quiet for longer than the longest pause starts over as well.
    if (
      !entry || entry.generation !== generation || now - entry.lastWriteAt > this.#maxBackoffMs
    ) {
      entry = { generation, writes: [], loops: 0, lastWriteAt: now };
      writes.set(key, entry);
    }
    entry.writes.push(now);
    entry.lastWriteAt = now;
  }

  /** Forgets what `writer` wrote for `parent` (a parent that is gone). */
  forget(writer: string, parent: ObjectRef): void {
    this.#entries.delete(parentKey({ writer, parent }));
  }

  /**
   * Forgets entries that can no longer refuse a write: no write within the window and no loop
   * seen, or quiet past the longest pause (which starts a key over anyway). Such an entry and no
   * entry give the same verdicts; without this, every child ever written would keep one.
   */
  #sweep(now: number): void {
    this.#lastSweep = now;
    for (const [parent, children] of this.#entries) {
      for (const [child, entry] of children) {
        const quiet = now - entry.lastWriteAt;
        if ((entry.loops === 0 && quiet >= this.#windowMs) || quiet > this.#maxBackoffMs) {
          children.delete(child);
        }
      }
      if (children.size === 0) this.#entries.delete(parent);
    }
  }

  #parent(target: WriteTarget): Map<string, Entry> | undefined {
    return this.#entries.get(parentKey(target));
  }
}

/** A writer's entries for one parent: a plugin name holds no space, and a key none either. */
function parentKey(target: Pick<WriteTarget, "writer" | "parent">): string {
  return `${target.writer} ${refKey(target.parent)}`;
}

function childKey(target: WriteTarget): string {
  return target.child ? refKey(target.child) : "status";
}
