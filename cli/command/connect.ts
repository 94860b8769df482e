/** A client of the cluster the connection flags name, with their rate limit: `run`, `install`, `uninstall`. */
import { KubeClient, loadClusterConfig } from "../../kube/mod.ts";
import type { CONNECTION } from "./flag_table.ts";
import type { FlagValuesOf } from "../flags/flags.ts";
import type { OperatorIdentity } from "../../runtime/mod.ts";

/**
 * Loads the configuration (`--kubeconfig`, `--context`, …) and makes a client with its limits,
 * whose requests say who sends them (`<operator>/<version>`, in the API server's audit log).
 */
export async function connect(
  values: FlagValuesOf<typeof CONNECTION>,
  operator: OperatorIdentity,
  options: { purpose?: string } = {},
): Promise<KubeClient> {
  // Both are held to their rules (cli/command/flag_table.ts) as the flags are parsed.
  const qps = values["kube-api-qps"];
  const burst = values["kube-api-burst"];
  const config = await loadClusterConfig({
    kubeconfig: values.kubeconfig,
    context: values.context,
  });
  return new KubeClient(config, {
    // A purpose (a dry run's) tells its requests apart in the API server's audit log.
    userAgent: options.purpose ? `${operator.userAgent} (${options.purpose})` : operator.userAgent,
    rateLimit: { qps, burst },
  });
}
