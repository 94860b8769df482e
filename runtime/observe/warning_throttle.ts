/**
 * Keeps outages quiet: a warning is logged once per cause per interval, and then how many more
 * times that cause came up, instead of one line per retry of every object and informer.
 */
import { ApiError } from "../../kube/errors.ts";
import { NetworkError } from "../../kube/network_error.ts";
import type { Logger } from "./logging.ts";

/**
 * What two failures have in common when they are the same trouble: the network failure, or the
 * API status, or else the message. Object names are not part of it, so 200 objects failing for
 * one reason are one cause.
 */
export function causeOf(error: unknown): string {
  if (error instanceof NetworkError) return `network ${error.failure}`;
  if (error instanceof ApiError) return `api ${error.code} ${error.reason}`;
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

interface Window {
  suppressed: number;
  message: string;
  properties: Record<string, unknown>;
  timer: ReturnType<typeof setTimeout>;
}

/**
 * Logs a warning once per cause per interval, then how many more came (see the module doc); what
 * every retry loop warns through.
 */
export class WarningThrottle {
  readonly #log: Logger;
  readonly #intervalMs: number;
  readonly #windows = new Map<string, Window>();

  /** `intervalMs`: how long after a warning the same cause stays quiet; default 30 s. */
  constructor(log: Logger, intervalMs = 30_000) {
    this.#log = log;
    this.#intervalMs = intervalMs;
  }

  /** Logs `message` now, or counts it if `cause` was logged within the interval. */
  warn(cause: string, message: string, properties: Record<string, unknown> = {}): void {
    const window = this.#windows.get(cause);
    if (window) {
      window.suppressed++;
      window.message = message;
      window.properties = properties;
      return;
    }
    this.#log.warn(message, properties);
    this.#open(cause, message, properties);
  }

  /** Logs what each cause still has to say, and forgets them all. */
  flush(): void {
    for (const [cause, window] of this.#windows) {
      clearTimeout(window.timer);
      this.#windows.delete(cause);
      this.#report(window);
    }
  }

  #open(cause: string, message: string, properties: Record<string, unknown>): void {
    const window: Window = {
      suppressed: 0,
      message,
      properties,
      timer: setTimeout(() => {
        this.#windows.delete(cause);
        // A cause still coming up is reported once more per interval, with its count.
        if (this.#report(window)) this.#open(cause, window.message, window.properties);
      }, this.#intervalMs),
    };
    // Quiet bookkeeping must not keep a finished process alive.
    window.timer.unref();
    this.#windows.set(cause, window);
  }

  #report(window: Window): boolean {
    if (!window.suppressed) return false;
    this.#log.warn(`${window.message} ({repeats} more times in {seconds} s)`, {
      ...window.properties,
      repeats: window.suppressed,
      seconds: this.#intervalMs / 1000,
    });
    return true;
  }
}
