/**
 * What the probes say about the connection to the API server: `/readyz` fails while requests get
 * no answer, and `/healthz` once that has lasted `unhealthyAfterMs`, so the kubelet restarts a
 * process that cannot recover by itself.
 */
import type { ConnectionHealth } from "../../kube/connection_health.ts";
import type { ProbeChecks } from "./probes.ts";

/** The `api-server` checks of both probes. */
export function connectionChecks(
  health: Pick<ConnectionHealth, "unreachable">,
  unhealthyAfterMs: number,
): ProbeChecks {
  const noAnswer = (down: { forMs: number; error: { message: string } }) =>
    `no answer for ${Math.round(down.forMs / 1000)} s: ${down.error.message}`;
  return {
    healthz: {
      "api-server": () => {
        const down = health.unreachable();
        return down && down.forMs >= unhealthyAfterMs ? noAnswer(down) : undefined;
      },
    },
    readyz: {
      "api-server": () => {
        const down = health.unreachable();
        return down && noAnswer(down);
      },
    },
  };
}
