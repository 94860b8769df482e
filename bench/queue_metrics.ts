/**
 * What bench:backlog reads of the operator's work queues in its own `/metrics`: when a backlog has
 * drained (every queue that took the backlog's keys has taken one per object and has none left
 * waiting), and how long keys waited for a worker and were worked on, on average.
 */

/** One work queue's keys waiting now, ever added, and ever handed to a worker, per lane. */
export interface QueueLanes {
  depth: Record<string, number>;
  adds: Record<string, number>;
  taken: Record<string, number>;
}

/** The work queues in a `/metrics` text (every replica's, one text), by name. */
export function queuesOf(metrics: string): Map<string, QueueLanes> {
  const queues = new Map<string, QueueLanes>();
  for (const line of metrics.split("\n")) {
    const match =
      /^workqueue_(depth|adds_total|queue_duration_seconds_count)\{([^}]*)\} ([0-9.e+]+)$/
        .exec(line);
    if (!match) continue;
    const labels = Object.fromEntries(
      [...match[2].matchAll(/([a-z_]+)="([^"]*)"/g)].map((m) => [m[1], m[2]]),
    );
    const queue = queues.get(labels.name) ?? { depth: {}, adds: {}, taken: {} };
    queues.set(labels.name, queue);
    const field = match[1] === "depth"
      ? queue.depth
      : match[1] === "adds_total"
      ? queue.adds
      : queue.taken;
    const lane = labels.priority ?? "";
    field[lane] = (field[lane] ?? 0) + Number(match[3]);
  }
  return queues;
}

/**
 * Whether the backlog of `count` objects, queued at once when the queues began (or, with `since`,
 * the queues' state just before it: a resync's in a running process), has drained from every
 * queue that took it (at least one must have; one that took fewer has not had it, or holds
 * another kind). With priorities its keys waited in the `bulk` lane, which must be empty (an edit
 * that came for one of them moved it to the `edit` lane). Without, everything waits in one line
 * (the `edit` lane), where what came later waits behind it: once `count` keys have been handed
 * out, the backlog's have, however many edits wait behind them.
 */
export function drained(
  queues: Map<string, QueueLanes>,
  options: { count: number; priority: boolean; since?: Map<string, QueueLanes> },
): boolean {
  const lane = options.priority ? "bulk" : "edit";
  const counted = (name: string, field: "adds" | "taken") =>
    (queues.get(name)?.[field][lane] ?? 0) - (options.since?.get(name)?.[field][lane] ?? 0);
  const backlogged = [...queues.keys()].filter((name) => counted(name, "adds") >= options.count);
  return backlogged.length > 0 &&
    backlogged.every((name) =>
      options.priority
        ? (queues.get(name)!.depth[lane] ?? 0) === 0
        : counted(name, "taken") >= options.count
    );
}

/**
 * The mean of a histogram in a `/metrics` text, in ms, per value of the labels `by` (joined by a
 * space; summed over the other labels and replicas): `workqueue_queue_duration_seconds` by `name`
 * and `priority`, say.
 */
export function meansMs(metrics: string, histogram: string, by: string[]): Record<string, number> {
  const sums: Record<string, { sum: number; count: number }> = {};
  for (const line of metrics.split("\n")) {
    const match = /^([a-z_]+)_(sum|count)\{([^}]*)\} ([0-9.e+-]+)$/.exec(line);
    if (!match || match[1] !== histogram) continue;
    const label = by.map((name) => new RegExp(`${name}="([^"]*)"`).exec(match[3])?.[1] ?? "")
      .join(" ");
    const entry = sums[label] ??= { sum: 0, count: 0 };
    entry[match[2] as "sum" | "count"] += Number(match[4]);
  }
  return Object.fromEntries(
    Object.entries(sums).filter(([, s]) => s.count > 0).map((
      [label, s],
    ) => [label, Math.round(s.sum / s.count * 1000)]),
  );
}
