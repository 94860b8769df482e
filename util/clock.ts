/**
 * The two clocks a process has, and elapsed time measured on them. The monotonic clock never
 * jumps but may stand still while the machine is suspended; the wall clock keeps counting through
 * a suspension but can be stepped either way (NTP, an operator, a VM restored from a snapshot).
 * Which one to believe depends on which mistake is safe: see `Instant.elapsedMs`.
 */

/** Where time comes from; tests pass their own to jump one clock and not the other. */
export interface Clock {
  /** Milliseconds on the monotonic clock; never goes back. */
  monotonicMs(): number;
  /** Milliseconds since the epoch on the wall clock; may jump either way. */
  wallMs(): number;
}

/** The process's own clocks. */
export const systemClock: Clock = {
  monotonicMs: () => performance.now(),
  wallMs: () => Date.now(),
};

/** Milliseconds on the monotonic clock; never goes back. */
export function monotonicMs(): number {
  return performance.now();
}

/** A point in time read on both clocks, which can say how long ago it was. */
export class Instant {
  private constructor(
    readonly monotonic: number,
    readonly wall: number,
    readonly clock: Clock,
  ) {}

  /** This instant, read on both of `clock`'s clocks (the process's own by default). */
  static now(clock: Clock = systemClock): Instant {
    return new Instant(clock.monotonicMs(), clock.wallMs(), clock);
  }

  /**
   * The larger of the two clocks' readings of the time since this instant: never less than the
   * time that really passed, unless both clocks are wrong at once. Neither a monotonic clock that
   * stood still (a suspended machine) nor a wall clock stepped back makes it look more recent
   * than it is; a wall clock stepped forward makes it look older. For deadlines that must not be
   * overrun (the leader's fence).
   */
  elapsedMs(): number {
    return Math.max(this.monotonicElapsedMs(), this.clock.wallMs() - this.wall);
  }

  /**
   * The monotonic clock's reading alone: no jump of the wall clock moves it, and a suspension
   * makes it smaller than the time that passed. For waits that must not end early (a standby
   * waiting for another's lease to run out).
   */
  monotonicElapsedMs(): number {
    return this.clock.monotonicMs() - this.monotonic;
  }
}
