/**
 * How long a Ptemplate's first status waits for its children and their controllers: writing
 * "pending" first and the real state a moment later would be two writes for one.
 */

/**
 * How long a Ptemplate's first status may wait (after it was made, or after this process started,
 * whichever is later) for its children to appear and their controllers to act on them. Long while
 * the DaemonSet controller is seen at work (a busy one, at its own 20 requests a second, takes
 * minutes over thousands of DaemonSets); short when it has not acted on any DaemonSet yet, since it
 * may not be running at all. Longest while a child is still missing and no plugin says why: the
 * plugins that make them are then behind (a start over 10,000 Ptemplates takes minutes), and a
 * "pending" written meanwhile is one more write competing with theirs. A Ptemplate that already
 * has a status, or a problem, never waits.
 */
export const FIRST_STATUS_GRACE_MS = {
  controllerSeen: 60_000,
  otherwise: 5_000,
  childrenMissing: 300_000,
};

/** What the first status's wait depends on, as a visit finds it. */
export interface FirstStatusWorld {
  /** Since the Ptemplate was made, or this process started, whichever is later. */
  waitedMs: number;
  /** It has a status already, or a problem to report: then nothing waits. */
  reported: boolean;
  /** A child (the DaemonSet, or the Module with KMM installed) is not there yet. */
  missing: boolean;
  /** The DaemonSet controller has not acted on the DaemonSet's latest generation yet. */
  unobserved: boolean;
  /**
   * What the DaemonSet controller will find is known already: no node has the Ptemplate's labels,
   * so it will schedule nothing and the status it waits for says the same as one written now.
   */
  outcomeKnown: boolean;
  /** Whether the DaemonSet controller is seen at work (asked only past the short grace). */
  controllerSeen: () => boolean;
}

/** The milliseconds the first status should still wait; 0 to write it now. */
export function firstStatusWaitMs(world: FirstStatusWorld): number {
  const { waitedMs, missing } = world;
  if (world.reported) return 0;
  if (!missing && (!world.unobserved || world.outcomeKnown)) return 0;
  // The short grace is checked first, so that the look for the DaemonSet controller at work (a
  // look at the cache) is made past it alone.
  const seen = !missing && waitedMs >= FIRST_STATUS_GRACE_MS.otherwise && world.controllerSeen();
  const grace =
    FIRST_STATUS_GRACE_MS[missing ? "childrenMissing" : seen ? "controllerSeen" : "otherwise"];
  return Math.max(0, grace - waitedMs);
}
