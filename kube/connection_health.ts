/** Remembers whether the API server answers: when it last did, since when it has not, and why. */
import { monotonicMs } from "../util/clock.ts";
import type { NetworkError } from "./network_error.ts";

/** Since when, and why, the API server has not answered. */
export interface Unreachable {
  /** Milliseconds since the first failure after the last answer. */
  forMs: number;
  error: NetworkError;
}

export class ConnectionHealth {
  #lastAnswer = monotonicMs();
  #failingSince?: number;
  #lastError?: NetworkError;

  /** Any HTTP answer, or bytes on a stream: the connection works. */
  answered(): void {
    this.#lastAnswer = monotonicMs();
    this.#failingSince = undefined;
    this.#lastError = undefined;
  }

  /** A request got no answer at all. */
  failed(error: NetworkError): void {
    this.#failingSince ??= monotonicMs();
    this.#lastError = error;
  }

  /** Milliseconds since the server last answered (or since this was created). */
  silentForMs(): number {
    return monotonicMs() - this.#lastAnswer;
  }

  /** Undefined while requests get answers; otherwise how long they have not, and the last reason. */
  unreachable(): Unreachable | undefined {
    if (this.#failingSince === undefined || !this.#lastError) return undefined;
    return { forMs: monotonicMs() - this.#failingSince, error: this.#lastError };
  }
}
