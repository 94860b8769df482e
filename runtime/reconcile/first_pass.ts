/**
 * One pass over everything a controller had when it started: the keys not yet visited, and a
 * promise that they all have been (what a dry run waits for before it says what it found).
 */
export class Pass {
  readonly #left: Set<string>;
  /** Resolves once every key has been visited (at once when there were none). */
  readonly done: Promise<void>;
  #resolve!: () => void;

  constructor(keys: string[]) {
    this.#left = new Set(keys);
    this.done = new Promise((resolve) => this.#resolve = resolve);
    if (!this.#left.size) this.#resolve();
  }

  /** `key` was visited (or is gone); keys of no pass are ignored. */
  visited(key: string): void {
    if (this.#left.delete(key) && !this.#left.size) this.#resolve();
  }
}
