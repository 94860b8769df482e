/** The tables bench:scale prints: our run's figures, and ours beside each peer run's. */
import { COMPARED, type Compared } from "./scale_figures.ts";

/** CPU seconds used in a phase, by whom, and how long it took. */
interface PhaseCpu {
  seconds: number;
  controlPlane: number;
  operator?: number;
  client?: number;
  /** Under --cpu-limit, each replica's share of periods throttled. */
  throttled?: number[];
}

/** `control plane 60.1 s + operator 70.2 s in 54.1 s: 2.4 cores`. */
function cores(phase: PhaseCpu, other: "operator" | "client"): string {
  const theirs = phase[other] ?? 0;
  return `control plane ${phase.controlPlane.toFixed(1)} s + ${other} ${theirs.toFixed(1)} s ` +
    `in ${phase.seconds.toFixed(1)} s: ${
      ((phase.controlPlane + theirs) / phase.seconds).toFixed(2)
    } cores`;
}

/** Our run's rows: measure, value, what stands beside it. */
export function rowsOf(result: Record<string, unknown>): string[][] {
  const r = result as Record<string, number> & {
    statusLagSeconds: { median: number; p99: number };
  };
  const replicas = r.replicas;
  const cpuLimit = result.cpuLimitPerReplica as number | undefined;
  return [
    [
      "all children exist",
      `${r.childrenSeconds.toFixed(1)} s`,
      `reference ${r.referenceSeconds.toFixed(1)} s, ratio ${r.childrenRatio.toFixed(2)}×; ` +
      `the first after ${r.firstChildSeconds.toFixed(1)} s`,
    ],
    ["quiet after", `${r.quietSeconds.toFixed(1)} s`, ""],
    [
      "writes",
      `${r.writesTotal} (${r.writesPerPtemplate.toFixed(2)} per Ptemplate)`,
      JSON.stringify(result.writes),
    ],
    [
      replicas > 1 ? "peak RSS, largest replica" : "peak RSS",
      `${r.peakRssMiB.toFixed(1)} MiB`,
      `empty cluster ${r.emptyRssMiB.toFixed(1)} MiB, +${
        (r.peakRssMiB - r.emptyRssMiB).toFixed(1)
      } MiB`,
    ],
    [
      "settled RSS",
      `${r.settledRssMiB.toFixed(1)} MiB`,
      replicas > 1
        ? `each replica's peak: ${
          (result.replicaRssMiB as { peak: number }[]).map((x) => x.peak.toFixed(1)).join(", ")
        } MiB`
        : "",
    ],
    ["CPU", `${r.cpuSeconds.toFixed(1)} s`, replicas > 1 ? "all replicas" : ""],
    ...cpuLimit === undefined ? [] : [[
      "CPU limit per replica",
      `${cpuLimit} cores`,
      `throttled in ${
        (result.childrenCpu as PhaseCpu).throttled!.map((t) => `${Math.round(t * 100)}%`).join(
          ", ",
        )
      } of its periods until the children exist`,
    ]],
    [
      "CPU while the children are made",
      cores(result.childrenCpu as PhaseCpu, "operator"),
      `raw client: ${cores(result.referenceCpu as PhaseCpu, "client")}`,
    ],
    [
      "status lag",
      `median ${r.statusLagSeconds.median.toFixed(2)} s`,
      `p99 ${r.statusLagSeconds.p99.toFixed(2)} s, behind ${
        r.daemonSetStatusWrites ?? "?"
      } DaemonSet status writes by their controller`,
    ],
    ["writes idle 20 s / after a restart", `${r.writesWhileIdle} / ${r.writesAfterRestart}`, ""],
  ];
}

const LABELS: Record<typeof COMPARED[number], [string, (n: number) => string]> = {
  childrenSeconds: ["all children exist", (n) => `${n.toFixed(1)} s`],
  childrenRatio: ["children / raw client, same hour", (n) => `${n.toFixed(2)}×`],
  peakRssMiB: ["peak RSS", (n) => `${n.toFixed(1)} MiB`],
  emptyRssMiB: ["RSS, empty cluster", (n) => `${n.toFixed(1)} MiB`],
  cpuSeconds: ["CPU", (n) => `${n.toFixed(1)} s`],
  writesPerPtemplate: ["writes per Ptemplate", (n) => n.toFixed(2)],
};

/** Ours beside each peer run: one row per compared figure, the peer's with ours/its ratio. */
export function peerRows(result: Record<string, unknown>): string[][] {
  const ours = result as unknown as Compared;
  const peers = result.peers as (Compared & { ratios: Compared })[];
  return COMPARED.map((key) => {
    const [label, format] = LABELS[key];
    return [
      label,
      format(ours[key]),
      ...peers.map((peer) => `${format(peer[key])} (ours ${peer.ratios[key].toFixed(2)}×)`),
    ];
  });
}
