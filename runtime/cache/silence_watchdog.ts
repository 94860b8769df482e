/**
 * Ends a watch that has gone silent: calls `onSilent` once nothing has come for `ms` (a dead
 * connection can look open for hours). An event only notes the time; the one timer, when it
 * fires, looks at when the last event came and waits the rest, so a busy watch does not set a
 * timer again for every event.
 */
import { monotonicMs } from "../../util/clock.ts";

/** The silence timer of one watch (see the module doc). */
export class SilenceWatchdog {
  readonly #ms: number;
  readonly #onSilent: () => void;
  #timer?: ReturnType<typeof setTimeout>;
  #heardAt: number;
  #silent = false;

  /** Starts the timer at once: a watch that delivers nothing at all is silent too. */
  constructor(ms: number, onSilent: () => void) {
    this.#ms = ms;
    this.#onSilent = onSilent;
    this.#heardAt = monotonicMs();
    this.#arm(ms);
  }

  /** True once the watch went silent (and `onSilent` was called). */
  get silent(): boolean {
    return this.#silent;
  }

  /** The watch delivered something: the silence starts over. */
  heard(): void {
    this.#heardAt = monotonicMs();
  }

  /** The watch ended: no more timer. */
  stop(): void {
    clearTimeout(this.#timer);
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(() => {
      const quietMs = monotonicMs() - this.#heardAt;
      if (quietMs < this.#ms) return this.#arm(this.#ms - quietMs);
      this.#silent = true;
      this.#onSilent();
    }, ms);
  }
}
