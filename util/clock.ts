/**
 * Measures elapsed time on both the monotonic and the wall clock and believes the larger, so that
 * neither a monotonic clock that stood still (a suspended machine) nor a wall clock stepped back
 * can make something look more recent than it is.
 */

/** Milliseconds on the monotonic clock; never goes back. */
export function monotonicMs(): number {
  return performance.now();
}

/** A point in time that can say how long ago it was, conservatively. */
export class Instant {
  private constructor(readonly monotonic: number, readonly wall: number) {}

  static now(): Instant {
    return new Instant(monotonicMs(), Date.now());
  }

  /** The larger of the two clocks' readings of the time since this instant. */
  elapsedMs(): number {
    return Math.max(monotonicMs() - this.monotonic, Date.now() - this.wall);
  }
}
