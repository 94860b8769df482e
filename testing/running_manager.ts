/** A Manager running in the test's own process against a control plane, stopped once, cleanly. */
import type { ClusterConfig } from "../kube/cluster_config.ts";
import { KubeClient } from "../kube/client.ts";
import { Manager, type ManagerOptions } from "../runtime/manager/mod.ts";

/** A Manager started by `runManager`, with its client, and the one way to stop both. */
export interface RunningManager {
  /** The running manager. */
  manager: Manager;
  /** The manager's own client, which `stop` closes. */
  client: KubeClient;
  /** Stops it (drains, releases the lease) and closes its client; again is a no-op. */
  stop(): Promise<void>;
}

/**
 * Starts `new Manager(options)` with a client of its own (`userAgent` tells it apart in audit
 * logs). Reads of fields a plugin did not declare throw (`strictReads`) unless told otherwise.
 */
export function runManager(
  config: ClusterConfig,
  options: Omit<ManagerOptions, "client"> & { userAgent?: string },
): RunningManager {
  const { userAgent, ...rest } = options;
  const client = new KubeClient(config, { userAgent });
  const manager = new Manager({ client, strictReads: true, ...rest });
  const abort = new AbortController();
  // A failure to start is the test's to hear, from stop(), not an unhandled rejection.
  const running = manager.run(abort.signal).then(() => undefined, (error: unknown) => error);
  let stopped: Promise<void> | undefined;
  return {
    manager,
    client,
    stop: () =>
      stopped ??= (async () => {
        abort.abort();
        const failure = await running;
        client.close();
        if (failure) throw failure;
      })(),
  };
}
