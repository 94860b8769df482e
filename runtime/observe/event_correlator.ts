/**
 * Decides what becomes of an Event before anything is written, the way client-go's
 * EventCorrelator does: events about the same object with the same type and reason are combined
 * once too many different messages come within a window (a message with a counter in it would
 * otherwise be a new Event every time), and each object may cause only so many writes (a burst,
 * then one per interval), so a flood about one object cannot flood the API server.
 */

export interface CorrelatorOptions {
  /** Different messages of one (object, type, reason) within the window before they combine; 10. */
  maxSimilar?: number;
  /** Default 10 minutes. */
  windowMs?: number;
  /** Writes one object may cause at once; default 25. */
  burst?: number;
  /** One more write per object after this long; default 5 minutes. */
  refillMs?: number;
}

/** What client-go prefixes a combined event's message with. */
export const COMBINED_PREFIX = "(combined from similar events): ";

interface Similar {
  /** At most `maxSimilar`: an array is a fraction of a Set's size, and as quick to search. */
  messages: string[];
  since: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * client-go's EventCorrelator: decides whether an Event is written and in what words (combined with
 * its similar ones), per object (see the module doc).
 */
export class EventCorrelator {
  readonly #maxSimilar: number;
  readonly #windowMs: number;
  readonly #burst: number;
  readonly #refillMs: number;
  readonly #similar = new Map<string, Similar>();
  readonly #buckets = new Map<string, Bucket>();

  /** Empty; every option has client-go's default. */
  constructor(options: CorrelatorOptions = {}) {
    this.#maxSimilar = options.maxSimilar ?? 10;
    this.#windowMs = options.windowMs ?? 10 * 60_000;
    this.#burst = options.burst ?? 25;
    this.#refillMs = options.refillMs ?? 5 * 60_000;
  }

  /**
   * The message to record for this event: its own, or, once `maxSimilar` different messages of
   * the same object, type and reason came within the window, the combined one (which then
   * aggregates like any repeated event).
   */
  message(uid: string, type: string, reason: string, message: string, now: number): string {
    const key = JSON.stringify([uid, type, reason]);
    let similar = this.#similar.get(key);
    if (!similar || now - similar.since > this.#windowMs) {
      similar = { messages: [], since: now };
      this.#similar.set(key, similar);
    }
    if (similar.messages.includes(message)) return message;
    if (similar.messages.length >= this.#maxSimilar) return `${COMBINED_PREFIX}${message}`;
    similar.messages.push(message);
    return message;
  }

  /** Whether one more write about the object `uid` may go out now; takes a token if so. */
  admit(uid: string, now: number): boolean {
    const bucket = this.#buckets.get(uid) ?? { tokens: this.#burst, at: now };
    bucket.tokens = Math.min(this.#burst, bucket.tokens + (now - bucket.at) / this.#refillMs);
    bucket.at = now;
    this.#buckets.set(uid, bucket);
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

  /** Forgets what is older than the window (and buckets full again), so memory stays bounded. */
  sweep(now: number): void {
    for (const [key, similar] of this.#similar) {
      if (now - similar.since > this.#windowMs) this.#similar.delete(key);
    }
    for (const [uid, bucket] of this.#buckets) {
      if (bucket.tokens + (now - bucket.at) / this.#refillMs >= this.#burst) {
        this.#buckets.delete(uid);
      }
    }
  }
}
