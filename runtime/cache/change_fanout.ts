/**
 * Tells every subscriber of an informer's cache about each change, in order: a subscriber that
 * throws is logged and the others are told all the same.
 */
import type { Logger } from "../observe/mod.ts";
import type { ChangeHandler } from "./informer_options.ts";
import type { StoreChange } from "./store.ts";

/** The subscribers to one cache's changes (see the module doc). */
export class ChangeFanout<T> {
  readonly #handlers = new Set<ChangeHandler<T>>();
  readonly #log: Logger;

  /** `log`: where a subscriber's failure goes. */
  constructor(log: Logger) {
    this.#log = log;
  }

  /** Subscribes; returns the unsubscribe function. New subscribers do not get a replay. */
  add(handler: ChangeHandler<T>): () => void {
    this.#handlers.add(handler);
    return () => this.#handlers.delete(handler);
  }

  /** Tells each subscriber of each change, change by change. */
  emit(changes: StoreChange<T>[]): void {
    for (const change of changes) {
      for (const handler of this.#handlers) {
        try {
          handler(change);
        } catch (error) {
          this.#log.error("change handler failed: {error}", { error });
        }
      }
    }
  }
}
