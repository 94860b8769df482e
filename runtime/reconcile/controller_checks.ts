/** What `/healthz` says of the controllers: failing while one that should run has stopped. */
import type { ProbeChecks } from "../observe/mod.ts";
import type { Controller } from "./controller.ts";

/**
 * `/healthz` fails while a controller that should run has stopped (a bug in the machinery, not a
 * plugin's failure): the kubelet restarts the process. `running` says whether they should run
 * (this instance leads).
 */
export function controllerChecks(
  controllers: Pick<Controller, "name" | "failure">[],
  running: () => boolean,
): ProbeChecks {
  return {
    healthz: {
      controllers: () => {
        if (!running()) return undefined;
        const failed = controllers.filter((c) => c.failure);
        return failed.length ? failed.map((c) => `${c.name}: ${c.failure}`).join("; ") : undefined;
      },
    },
  };
}
