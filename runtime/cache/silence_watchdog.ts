/**
 * Ends a watch that has gone silent: a timer, set again by every event the watch delivers, that
 * calls `onSilent` once nothing has come for `ms` (a dead connection can look open for hours).
 */
export class SilenceWatchdog {
  readonly #ms: number;
  readonly #onSilent: () => void;
  #timer?: ReturnType<typeof setTimeout>;
  #silent = false;

  /** Starts the timer at once: a watch that delivers nothing at all is silent too. */
  constructor(ms: number, onSilent: () => void) {
    this.#ms = ms;
    this.#onSilent = onSilent;
    this.#arm();
  }

  /** True once the watch went silent (and `onSilent` was called). */
  get silent(): boolean {
    return this.#silent;
  }

  /** The watch delivered something: the silence starts over. */
  heard(): void {
    clearTimeout(this.#timer);
    this.#arm();
  }

  /** The watch ended: no more timer. */
  stop(): void {
    clearTimeout(this.#timer);
  }

  #arm(): void {
    this.#timer = setTimeout(() => {
      this.#silent = true;
      this.#onSilent();
    }, this.#ms);
  }
}
