/**
 * The figures bench:scale derives from what it recorded: an operator's writes from the API
 * server's audit log, its work per Ptemplate from its /metrics, and ours beside a peer's as
 * ratios. Pure functions: the bench gathers, these count.
 */
import { type AuditEvent, madeAnObject, WRITE_VERBS } from "../testing/audit_log.ts";

/** When the API server received a request, in ms since the epoch. */
export const at = (e: AuditEvent): number => Date.parse(e.requestReceivedTimestamp);

/** A write of the operator's work: not of a Lease (leader election, a ring's shards). */
export const isWork = (e: AuditEvent): boolean =>
  WRITE_VERBS.has(e.verb) && e.objectRef?.resource !== "leases";

/** What an operator wrote from its start (`since`, ms) on, as its user `username`. */
export interface WriteFigures {
  /** From the start to the last child (Module or DaemonSet) created. */
  childrenSeconds: number;
  /** From the start to the first child: the process, its caches' first lists. */
  firstChildSeconds: number;
  /** From the start to its last write. */
  quietSeconds: number;
  /**
   * Writes by verb and resource (`create modules`, `patch ptemplates/status`); an apply that made
   * the object is a `create`.
   */
  writes: Record<string, number>;
  /** Writes per 5 s after the start, by resource. */
  writeTimeline: Record<string, Record<string, number>>;
  writesTotal: number;
  writesPerPtemplate: number;
}

/** The writes of `username` from `since` on, for `count` Ptemplates. */
export function writeFigures(
  audit: AuditEvent[],
  options: { username: string; since: number; count: number },
): WriteFigures {
  const { username, since, count } = options;
  const writes = audit.filter((e) => e.user.username === username && at(e) >= since && isWork(e));
  const childCreates = writes.filter((e) =>
    madeAnObject(e) &&
    (e.objectRef?.resource === "modules" || e.objectRef?.resource === "daemonsets")
  );
  const byKind: Record<string, number> = {};
  const timeline: Record<string, Record<string, number>> = {};
  for (const e of writes) {
    const ref = e.objectRef!;
    const verb = madeAnObject(e) ? "create" : e.verb;
    const key = `${verb} ${ref.resource}${ref.subresource ? `/${ref.subresource}` : ""}`;
    byKind[key] = (byKind[key] ?? 0) + 1;
    const bucket = `${Math.floor((at(e) - since) / 5_000) * 5}s`;
    const what = `${ref.resource}${ref.subresource ? "/status" : ""}`;
    timeline[bucket] ??= {};
    timeline[bucket][what] = (timeline[bucket][what] ?? 0) + 1;
  }
  return {
    childrenSeconds: (Math.max(...childCreates.map(at)) - since) / 1000,
    firstChildSeconds: (Math.min(...childCreates.map(at)) - since) / 1000,
    quietSeconds: writes.length ? (at(writes.at(-1)!) - since) / 1000 : 0,
    writes: byKind,
    writeTimeline: timeline,
    writesTotal: writes.length,
    writesPerPtemplate: writes.length / count,
  };
}

/**
 * What an operator did per Ptemplate, summed from its metrics (every replica's, one text):
 * reconciles per controller, queue adds, and requests by verb and code. controller-runtime's
 * metric names are ours, so a peer's /metrics reads the same.
 */
export function perPtemplate(metrics: string, count: number): Record<string, number> {
  const sums: Record<string, number> = {};
  const wanted: [RegExp, (labels: Record<string, string>) => string][] = [
    [/^controller_runtime_reconcile_total$/, (l) => `reconciles ${l.controller} ${l.result}`],
    [
      /^workqueue_adds_total$/,
      (l) => `queue adds ${l.name}${l.priority === undefined ? "" : ` ${l.priority}`}`,
    ],
    [/^rest_client_requests_total$/, (l) => `requests ${l.method} ${l.code}`],
  ];
  for (const line of metrics.split("\n")) {
    const match = /^([a-z_]+)\{([^}]*)\} ([0-9.e+]+)$/.exec(line);
    if (!match) continue;
    const rule = wanted.find(([name]) => name.test(match[1]));
    if (!rule) continue;
    const labels = Object.fromEntries(
      [...match[2].matchAll(/([a-z_]+)="([^"]*)"/g)].map((m) => [m[1], m[2]]),
    );
    const key = rule[1](labels);
    sums[key] = (sums[key] ?? 0) + Number(match[3]);
  }
  return Object.fromEntries(
    Object.entries(sums).filter(([, n]) => n > 0).map((
      [k, n],
    ) => [k, Math.round(n / count * 100) / 100]),
  );
}

/** The `p`th percentile (nearest rank) of `values`; NaN when there are none. */
export function percentile(values: number[], p: number): number {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/**
 * The figures every operator run is compared by, ours and each peer's. `childrenRatio` is the
 * children's time over a raw client's measured on the same control plane right after: on a
 * shared machine the hour's speed changes between runs, and this ratio travels where seconds do
 * not.
 */
export const COMPARED = [
  "childrenSeconds",
  "childrenRatio",
  "peakRssMiB",
  "emptyRssMiB",
  "cpuSeconds",
  "writesPerPtemplate",
] as const;
export type Compared = Record<typeof COMPARED[number], number>;

/** Ours over theirs, per figure, to two decimals: below 1 is ours smaller (faster, leaner). */
export function ratios(ours: Compared, theirs: Compared): Compared {
  return Object.fromEntries(
    COMPARED.map((key) => [key, Math.round(ours[key] / theirs[key] * 100) / 100]),
  ) as Compared;
}
