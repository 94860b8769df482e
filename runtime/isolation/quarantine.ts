/**
 * Keys whose reconciles keep passing their deadline: after `limit` in a row a key is put aside
 * (not visited again) until its object changes, so one object that hangs or spins its plugin
 * cannot take a worker slot, or restart a Worker, forever. A change is a new generation (a spec
 * edit), or, for kinds without one, a new resourceVersion.
 */

/** What a timeout of a key led to. */
export type TimeoutVerdict =
  | { quarantined: false; timeouts: number }
  | { quarantined: true; timeouts: number };

/** The version of an object that decides whether it changed since it was put aside. */
export interface Revision {
  /** The object's generation, for kinds that have one: what a spec edit changes. */
  generation?: number;
  /** The object's resourceVersion, which decides for kinds without a generation. */
  resourceVersion?: string;
}

/**
 * The keys put aside for passing their deadline again and again (see the module doc), one per
 * controller.
 */
export class Quarantine {
  readonly #limit: number;
  /** Timeouts in a row, by key. */
  readonly #timeouts = new Map<string, number>();
  /** Keys put aside, with the revision they were put aside at. */
  readonly #held = new Map<string, string>();

  /** `limit`: timeouts in a row that put a key aside (at least 1). */
  constructor(limit = 3) {
    this.#limit = Math.max(1, limit);
  }

  /** A visit of `key` at `revision` passed its deadline. */
  timedOut(key: string, revision: Revision): TimeoutVerdict {
    const timeouts = (this.#timeouts.get(key) ?? 0) + 1;
    this.#timeouts.set(key, timeouts);
    if (timeouts < this.#limit) return { quarantined: false, timeouts };
    this.#held.set(key, versionOf(revision));
    return { quarantined: true, timeouts };
  }

  /** A visit of `key` ended within its deadline: the count starts over. */
  finished(key: string): void {
    this.#timeouts.delete(key);
  }

  /**
   * True while `key` is put aside and its object is still at the revision it was put aside at;
   * once the object changed, the key is released (and its count starts over).
   */
  holds(key: string, revision: Revision | undefined): boolean {
    const held = this.#held.get(key);
    if (held === undefined) return false;
    if (revision && versionOf(revision) === held) return true;
    this.release(key);
    return false;
  }

  /** Forgets `key` (its object is gone, or changed). */
  release(key: string): void {
    this.#held.delete(key);
    this.#timeouts.delete(key);
  }

  /** Keys put aside now. */
  get size(): number {
    return this.#held.size;
  }
}

function versionOf(revision: Revision): string {
  return revision.generation !== undefined
    ? `g${revision.generation}`
    : `rv${revision.resourceVersion}`;
}
