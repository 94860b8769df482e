/**
 * The controllers of one process, run together while it leads: all started at once; stopped by a
 * drain (a shutdown or a hand-over: reconciles in flight finish, or are cancelled after the grace
 * period, and their Events go out) or at once (leadership lost: what was not written is no longer
 * ours to write).
 */
import type { StopReason } from "../leader/mod.ts";
import type { Logger } from "../observe/mod.ts";
import { withinMs } from "../../util/sleep.ts";

/**
 * The most a shutdown waits for the last Events (they are best effort): past it, the lease is
 * released and the process ends within the pod's grace period even if the API server is slow.
 */
export const EVENTS_FLUSH_MS = 5_000;

/** What the group runs: a controller's run loop and name. */
export interface GroupMember {
  /** The controller's name, in the log line of a run that failed. */
  readonly name: string;
  /** Runs until `stop` (drain) or `abort` (cancel in-flight reconciles). */
  run(stop: AbortSignal, abort: AbortSignal): Promise<void>;
}

/** What a stop does with the Events recorded: flush them, or drop them. */
export interface PendingEvents {
  /** Writes what waits, on a drain for shutdown, while the process still leads. */
  flush(): Promise<void>;
  /** Drops what waits, when leadership is lost: it is no longer ours to write. */
  discard(): void;
}

/** How a group starts and stops. */
export interface ControllerGroupOptions {
  /** How long a drain waits for reconciles in flight before cancelling them; default 30 s. */
  gracefulShutdownMs?: number;
  /** The Events the controllers recorded, flushed or dropped as the group stops. */
  events: PendingEvents;
  /** Where a controller that failed, and a drain that ran out of time, are told. */
  log: Logger;
  /** Told true when the controllers start, false once they have stopped. */
  onLeaderChange?: (leading: boolean) => void;
}

/** The controllers, started and stopped as one. */
export class ControllerGroup {
  #running?: { stop: AbortController; abort: AbortController; done: Promise<void> };

  /** A group that runs nothing until `start`. */
  constructor(
    private readonly members: readonly GroupMember[],
    private readonly options: ControllerGroupOptions,
  ) {}

  /** True from `start` until a stop has finished. */
  get running(): boolean {
    return this.#running !== undefined;
  }

  /** Starts every controller; one that fails is logged and never takes the others down. */
  start(): void {
    const stop = new AbortController();
    const abort = new AbortController();
    const done = Promise.all(
      this.members.map((member) =>
        member.run(stop.signal, abort.signal).catch((error) => {
          this.options.log.error("controller {controller} stopped with an error: {error}", {
            controller: member.name,
            error,
          });
        })
      ),
    ).then(() => {});
    this.#running = { stop, abort, done };
    this.options.onLeaderChange?.(true);
  }

  /**
   * Stops the controllers. `lost`: in-flight reconciles are cancelled and pending Events dropped
   * (writes are refused already). Otherwise they drain within the grace period; on `shutdown` the
   * last Events go out while this process still leads, before the lease does.
   */
  async stop(reason: StopReason): Promise<void> {
    const running = this.#running;
    if (!running) return;
    const { events, log } = this.options;
    running.stop.abort();
    if (reason === "lost") {
      running.abort.abort();
      events.discard();
    } else {
      const grace = this.options.gracefulShutdownMs ?? 30_000;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timedOut = await Promise.race([
        running.done.then(() => false),
        new Promise<boolean>((resolve) => timer = setTimeout(() => resolve(true), grace)),
      ]);
      clearTimeout(timer);
      if (timedOut) {
        log.warn("in-flight reconciles did not finish within {seconds} s; cancelling them", {
          seconds: grace / 1000,
        });
        running.abort.abort();
      }
    }
    await running.done;
    if (reason === "shutdown") await withinMs(events.flush(), EVENTS_FLUSH_MS);
    if (this.#running === running) {
      this.#running = undefined;
      this.options.onLeaderChange?.(false);
    }
  }
}
