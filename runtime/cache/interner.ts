/**
 * Shares what cached objects have in common: one copy of each equal string, and of each small
 * equal subtree (a container's defaults, a selector, a `managedFields` entry), instead of one per
 * object, as JSON.parse makes them.
 *
 * Why: the objects of a kind repeat themselves (the same image, field manager, update strategy
 * and volume in every DaemonSet), so much of what the caches hold is copies; shared, the caches
 * take less heap, and the garbage collector marks that much less on every full collection
 * (bench/README.md, "The cache: what it keeps"). How much is shared depends
 * on how alike the objects are: values unique to an object (names, uids, resourceVersions) are
 * kept as they are.
 *
 * A shared subtree is frozen: it belongs to many cached objects, so a write to it (which the
 * cache's contract forbids) throws instead of changing them all. What is unique to one object
 * stays as JSON.parse made it, top level included.
 *
 * How equal subtrees are found without building a text of each: subtrees are shared bottom-up, so
 * two equal subtrees have identical (`===`) children; a subtree is looked up by a hash of its
 * field names and its children's hashes, and a candidate with that hash is equal when its
 * children are the same ones. Only subtrees of at most `MAX_FIELDS` fields and items in all are
 * shared: small subtrees repeat, big ones rarely.
 *
 * The tables are bounded: past `maxEntries` they start over, which only means that objects cached
 * after that share with each other, not with the ones before.
 *
 * A new version of a cached object is interned beside the version it replaces: where a subtree is
 * equal to the one it had, the old one is kept (a status write leaves the rest of the object as it
 * was). Comparing costs less than hashing and looking up, and what was parsed anew then dies young
 * instead of being kept while the old copy waits for a full collection.
 */

/** A subtree with more fields and items than this (counted all the way down) is not shared. */
const MAX_FIELDS = 64;

/** The hash of a value that is not shared (nor is anything holding it). */
const UNSHARED = -1;

/** The hash of a shared subtree kept from the version before: worked out if its parent needs it. */
const PENDING = -2;

/** How much an Interner remembers. */
export interface InternerOptions {
  /** Strings and subtrees remembered before the tables start over; default 200,000. */
  maxEntries?: number;
}

/**
 * Shares equal strings and small equal subtrees between the objects a pool caches (see the module
 * doc); one per pool.
 */
export class Interner {
  /** Each distinct string, by itself: its index in `#texts` is its number. */
  readonly #strings = new Map<string, number>();
  readonly #texts: string[] = [];
  /** Shared subtrees by hash, and the further ones where hashes collide. */
  readonly #trees = new Map<number, object>();
  readonly #collisions = new Map<number, object[]>();
  readonly #maxEntries: number;
  /** The hash of the value `#walk` returned last (UNSHARED when it is not shared). */
  #hash = UNSHARED;
  /** The fields and items under the value `#walk` returned last. */
  #fields = 0;

  /** Empty tables, holding at most `maxEntries` before they start over. */
  constructor(options: InternerOptions = {}) {
    this.#maxEntries = options.maxEntries ?? 200_000;
  }

  /** How many strings and subtrees the tables hold, and how many hashes collided (for tests). */
  get size(): { strings: number; trees: number; collided: number } {
    let trees = this.#trees.size;
    for (const more of this.#collisions.values()) trees += more.length;
    return { strings: this.#strings.size, trees, collided: this.#collisions.size };
  }

  /**
   * `object` with its strings and small subtrees replaced, in place, by the shared copies of equal
   * ones (the object itself is never shared). It must be the caller's alone: just parsed.
   * `previous`, the version it replaces, lends it each subtree the two have equal.
   */
  intern<T extends object>(object: T, previous?: T): T {
    if (this.#strings.size > this.#maxEntries || this.#trees.size > this.#maxEntries) {
      this.#strings.clear();
      this.#texts.length = 0;
      this.#trees.clear();
      this.#collisions.clear();
    }
    const record = object as Record<string, unknown>;
    const old = previous as Record<string, unknown> | undefined;
    for (const name in record) {
      const value = record[name];
      const shared = old === undefined ? this.#walk(value) : this.#walkBeside(value, old[name]);
      if (shared !== value) record[name] = shared;
    }
    return object;
  }

  /** `#walk`, lending `value` what `old` (at the same place in the version it replaces) has equal. */
  #walkBeside(value: unknown, old: unknown): unknown {
    if (value === old || typeof value !== "object" || value === null) {
      // An equal string: the one kept already, whose hash is known.
      return this.#walk(typeof old === "string" && value === old ? old : value);
    }
    if (
      typeof old !== "object" || old === null || Array.isArray(value) !== Array.isArray(old) ||
      Object.isFrozen(value)
    ) {
      return this.#walk(value);
    }
    if (sameTree(value, old)) {
      // Kept as it was. One kept unshared (too big, or holding a uid) is unshared again, being
      // equal; a shared one's hash is worked out only if a new parent around it may be shared.
      this.#hash = Object.isFrozen(old) ? PENDING : UNSHARED;
      this.#fields = 1;
      return old;
    }
    return this.#walkTree(value, old as Record<string, unknown>);
  }

  /** The shared copy of `value`; its hash in `#hash`, its size in `#fields`. */
  #walk(value: unknown): unknown {
    this.#fields = 1;
    switch (typeof value) {
      case "string": {
        // A uid is unique by design: neither it nor what holds it is worth remembering.
        if (value.length === 36 && value[8] === "-" && value[13] === "-") {
          this.#hash = UNSHARED;
          return value;
        }
        const number = this.#number(value);
        this.#hash = mix(0x5bd1e995, number);
        return this.#texts[number];
      }
      case "number":
        this.#hash = Number.isInteger(value) ? mix(0x27d4eb2d, value | 0) : mix(0x165667b1, 0);
        return value;
      case "boolean":
        this.#hash = value ? 0x3c6ef372 : 0x1b873593;
        return value;
      case "object":
        if (value === null) {
          this.#hash = 0x85ebca6b;
          return value;
        }
        break;
      default:
        this.#hash = UNSHARED;
        return value;
    }
    return this.#walkTree(value);
  }

  /**
   * `#walk` of an object or array, beside its `old` version if there is one. One shared already
   * (frozen: interned again, or kept from the version before) is left as it is, its hash worked out.
   */
  #walkTree(value: object, old?: Record<string, unknown>): unknown {
    const frozen = Object.isFrozen(value);
    let hash = Array.isArray(value) ? 0x7f4a7c15 : 0x2545f491;
    let fields = 1;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const item = value[i];
        const shared = old === undefined ? this.#walk(item) : this.#walkBeside(item, old[i]);
        if (shared !== item && !frozen) value[i] = shared;
        if (this.#hash === PENDING) this.#settle(shared, hash);
        fields += this.#fields;
        hash = hash === UNSHARED || this.#hash === UNSHARED ? UNSHARED : mix(hash, this.#hash);
      }
    } else {
      const record = value as Record<string, unknown>;
      for (const name in record) {
        const field = record[name];
        const shared = old === undefined ? this.#walk(field) : this.#walkBeside(field, old[name]);
        if (shared !== field && !frozen) record[name] = shared;
        if (this.#hash === PENDING) this.#settle(shared, hash);
        fields += this.#fields;
        hash = hash === UNSHARED || this.#hash === UNSHARED
          ? UNSHARED
          : mix(mix(hash, this.#number(name)), this.#hash);
      }
    }
    this.#fields = fields;
    if (hash === UNSHARED || fields > MAX_FIELDS) {
      this.#hash = UNSHARED;
      return value;
    }
    this.#hash = hash;
    const found = this.#trees.get(hash);
    if (found === undefined) {
      this.#trees.set(hash, Object.freeze(value));
      return value;
    }
    if (sameChildren(found, value)) return found;
    const more = this.#collisions.get(hash);
    for (const candidate of more ?? []) if (sameChildren(candidate, value)) return candidate;
    if (more) more.push(Object.freeze(value));
    else this.#collisions.set(hash, [Object.freeze(value)]);
    return value;
  }

  /**
   * The hash and size of `kept`, a shared subtree kept from the version before, for a parent whose
   * hash so far is `parent`: worked out only if that parent may still be shared.
   */
  #settle(kept: unknown, parent: number): void {
    if (parent === UNSHARED) this.#hash = UNSHARED;
    else this.#walkTree(kept as object);
  }

  /** The number of a string (the same for equal strings), remembering it if new. */
  #number(text: string): number {
    let number = this.#strings.get(text);
    if (number === undefined) {
      number = this.#texts.length;
      this.#texts.push(text);
      this.#strings.set(text, number);
    }
    return number;
  }
}

/** Mixes `value` into `hash` (a 31-bit result, so that it is never UNSHARED). */
function mix(hash: number, value: number): number {
  return Math.imul(hash ^ value, 0x9e3779b1) >>> 1;
}

/** Deep equality of two JSON values (the order of an object's fields aside). */
function sameTree(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameTree(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let count = 0;
  for (const name in x) {
    if (!Object.hasOwn(y, name) || !sameTree(x[name], y[name])) return false;
    count++;
  }
  for (const _ in y) count--;
  return count === 0;
}

/** Equal, for subtrees whose own subtrees are shared: the same names, holding the same values. */
function sameChildren(a: object, b: object): boolean {
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((item, i) => Object.is(item, other[i]));
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let count = 0;
  for (const name in x) {
    if (!Object.hasOwn(y, name) || !Object.is(x[name], y[name])) return false;
    count++;
  }
  for (const _ in y) count--;
  return count === 0;
}
