/**
 * The recent visits of one controller, for `explain`: when each ran, why (every cause folded into
 * it), how long it waited and took, what it wrote, which Events and conditions it set, how it
 * ended and what comes next. A ring of a fixed number of visits, so its memory is bounded whatever
 * the number of objects: an object not visited lately has no history left.
 */
import type { Priority } from "./cause.ts";

/** One visit, as `explain` shows it. Nothing in it is secret: kinds, names, reasons, codes. */
export interface VisitRecord {
  /** When the visit began (ISO 8601). */
  at: string;
  /** The controller (plugin) that ran it. */
  controller: string;
  /** The queue key: `Kind.group/namespace/name`. */
  key: string;
  /** Why it ran, in words (`watched DaemonSet ns/x (status)`), the first ones of a burst. */
  causes: string[];
  /** How many more causes were folded in beyond `causes`. */
  moreCauses: number;
  /** The lane it waited in. */
  priority: Priority;
  /** Milliseconds it waited in the queue since its key was first added. */
  waitedMs: number;
  /** Milliseconds the visit took. */
  tookMs: number;
  /** How the visit ended: `reconciled`, `failed`, `gone`, `deleting`, `behind`, … */
  outcome: string;
  /** What happens next, in words: `again in 30 s`, `retry in 40 ms`, … */
  next?: string;
  /** The error it failed with, its message only. */
  error?: string;
  /** Each write it made, answered: `PATCH ptemplates/status ns/name → 200`. */
  writes: string[];
  /** Events it recorded: `Warning ReconcileError`. */
  events: string[];
  /** The conditions of the status it wrote: `Ready=False (Progressing)`. */
  conditions: string[];
  /** Its trace, when tracing is on. */
  traceId?: string;
}

/** The ring's size when none is given. */
export const DEFAULT_VISIT_HISTORY = 1000;

/** The last visits of one controller in a ring of fixed size (see the module doc), for `explain`. */
export class VisitHistory {
  readonly #ring: (VisitRecord | undefined)[];
  #next = 0;

  /** Keeps the last `size` visits (at least 1). */
  constructor(size = DEFAULT_VISIT_HISTORY) {
    this.#ring = new Array(Math.max(1, Math.floor(size)));
  }

  /** How many visits it keeps at most. */
  get capacity(): number {
    return this.#ring.length;
  }

  /** Keeps `record`, forgetting the oldest once full. */
  add(record: VisitRecord): void {
    this.#ring[this.#next] = record;
    this.#next = (this.#next + 1) % this.#ring.length;
  }

  /** The visits of `key` still kept, oldest first. */
  of(key: string): VisitRecord[] {
    const out: VisitRecord[] = [];
    for (let i = 0; i < this.#ring.length; i++) {
      const record = this.#ring[(this.#next + i) % this.#ring.length];
      if (record?.key === key) out.push(record);
    }
    return out;
  }
}
