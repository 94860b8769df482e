/**
 * Shares what cached objects have in common: one copy of each equal string, and of each small
 * equal subtree (a container's defaults, a selector, a `managedFields` entry), instead of one per
 * object, as JSON.parse makes them.
 *
 * Why: the objects of a kind repeat themselves. At 10,000 Ptemplates, their Modules and
 * DaemonSets, a third of what the caches held was copies (the same image, field manager, update
 * strategy and volume in every DaemonSet); shared, the caches take about a quarter less heap, and
 * the garbage collector marks that much less on every full collection. How much is shared depends
 * on how alike the objects are: values unique to an object (names, uids, resourceVersions) are
 * kept as they are.
 *
 * A shared subtree is frozen: it belongs to many cached objects, so a write to it (which the
 * cache's contract forbids) throws instead of changing them all. What is unique to one object
 * stays as JSON.parse made it, top level included.
 *
 * The tables are bounded: past `maxEntries` they start over, which only means that objects cached
 * after that share with each other, not with the ones before.
 */

/** A subtree is shared only when its key is this short: small subtrees repeat, big ones rarely. */
const MAX_KEY_LENGTH = 512;

export interface InternerOptions {
  /** Strings and subtrees remembered before the tables start over; default 200,000. */
  maxEntries?: number;
}

export class Interner {
  readonly #strings = new Map<string, string>();
  readonly #trees = new Map<string, object>();
  readonly #maxEntries: number;
  /**
   * The key of the value `#walk` returned last: an unambiguous text of its content (every string
   * length-prefixed), or undefined when it is too big or too unique to share.
   */
  #key: string | undefined;

  constructor(options: InternerOptions = {}) {
    this.#maxEntries = options.maxEntries ?? 200_000;
  }

  /** How many strings and subtrees the tables hold (for tests and metrics). */
  get size(): { strings: number; trees: number } {
    return { strings: this.#strings.size, trees: this.#trees.size };
  }

  /**
   * `object` with its strings and small subtrees replaced, in place, by the shared copies of equal
   * ones (the object itself is never shared). It must be the caller's alone: just parsed.
   */
  intern<T extends object>(object: T): T {
    if (this.#strings.size > this.#maxEntries || this.#trees.size > this.#maxEntries) {
      this.#strings.clear();
      this.#trees.clear();
    }
    const record = object as Record<string, unknown>;
    for (const name in record) record[name] = this.#walk(record[name]);
    return object;
  }

  /** The shared copy of `value` (its key in `#key`). */
  #walk(value: unknown): unknown {
    switch (typeof value) {
      case "string": {
        // A uid is unique by design: neither it nor what holds it is worth remembering.
        if (value.length === 36 && value[8] === "-" && value[13] === "-") {
          this.#key = undefined;
          return value;
        }
        let shared = this.#strings.get(value);
        if (shared === undefined) this.#strings.set(value, shared = value);
        this.#key = `s${value.length}:${value}`;
        return shared;
      }
      case "number":
        this.#key = `n${value};`;
        return value;
      case "boolean":
        this.#key = value ? "t" : "f";
        return value;
      case "object":
        if (value === null) {
          this.#key = "z";
          return value;
        }
        break;
      default:
        this.#key = undefined;
        return value;
    }
    let key: string | undefined;
    if (Array.isArray(value)) {
      key = "[";
      for (let i = 0; i < value.length; i++) {
        value[i] = this.#walk(value[i]);
        key = key !== undefined && this.#key !== undefined && key.length < MAX_KEY_LENGTH
          ? key + this.#key
          : undefined;
      }
      if (key !== undefined) key += "]";
    } else {
      const record = value as Record<string, unknown>;
      key = "{";
      for (const name in record) {
        record[name] = this.#walk(record[name]);
        key = key !== undefined && this.#key !== undefined && key.length < MAX_KEY_LENGTH
          ? `${key}${name.length}:${name}${this.#key}`
          : undefined;
      }
      if (key !== undefined) key += "}";
    }
    if (key === undefined || key.length > MAX_KEY_LENGTH) {
      this.#key = undefined;
      return value;
    }
    this.#key = key;
    const shared = this.#trees.get(key);
    if (shared) return shared;
    this.#trees.set(key, Object.freeze(value));
    return value;
  }
}
