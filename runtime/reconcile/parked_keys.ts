/**
 * Keys put aside until a cache that was behind has listed again: a visit decided from a cache
 * that may have missed changes (a parent deleted during an outage, whose children would be made
 * again) waits for it instead. Not a failure: no backoff, no error counted, nothing written.
 */

/** What parking needs of a cache. */
export interface Relisting {
  /** Resolves once the cache has listed again (at once when it is fresh). */
  whenFresh(): Promise<void>;
}

export class ParkedKeys {
  readonly #parked = new Map<Relisting, Set<string>>();
  readonly #wake: (key: string) => void;

  /** `wake` is called for each parked key once every cache it waits for has listed again. */
  constructor(wake: (key: string) => void) {
    this.#wake = wake;
  }

  /** Puts `key` aside until each of `behind` has listed again. */
  park(key: string, behind: Relisting[]): void {
    for (const cache of behind) {
      let keys = this.#parked.get(cache);
      if (!keys) {
        keys = new Set();
        this.#parked.set(cache, keys);
        const parked = keys;
        cache.whenFresh().then(() => {
          this.#parked.delete(cache);
          for (const key of parked) this.#wake(key);
        });
      }
      keys.add(key);
    }
  }

  /** Keys waiting, over every cache. */
  get size(): number {
    let size = 0;
    for (const keys of this.#parked.values()) size += keys.size;
    return size;
  }
}
