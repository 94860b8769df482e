/** client-go's leader-election metric, on a registry. */
import type { Gauge, Registry } from "../observe/mod.ts";

/** `leader_election_master_status{name}`: 1 while this instance leads. */
export function leaderGauge(registry: Registry): Gauge {
  return registry.gauge(
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master",
    ["name"],
  );
}
