/**
 * For the owners of worker_runner_process_test.ts (host_owner.ts, spin_owner.ts): a runner of the
 * spinner in its plugin host, as an operator would make it, and the object it spins on.
 */
import type { KubeObject, Stored } from "../../../kube/object.ts";
import { log, Registry } from "../../observe/mod.ts";
import type { ReconcileContext } from "../../plugin/mod.ts";
import { hostUnderDenoRun } from "../plugin_host.ts";
import type { PluginRunner } from "../plugin_runner.ts";
import { workerRunner } from "../worker_runner.ts";
import { spinner } from "./worker_plugins.ts";

/** The spinner's runner, its calls answered within `callTimeoutMs`. */
export function spinnerRunner(callTimeoutMs: number): PluginRunner {
  return workerRunner(spinner, {
    host: hostUnderDenoRun([new URL("./", import.meta.url).pathname]),
    url: new URL("./worker_plugins.ts", import.meta.url).href,
    exportName: "spinner",
    heapLimitMb: 32,
    callTimeoutMs,
    log: log("owner"),
    metrics: new Registry(),
  });
}

/** The object the spinner spins on. */
export const SPIN = {
  metadata: { name: "spin", namespace: "ns", uid: "spin", resourceVersion: "1" },
} as Stored<KubeObject>;

/** What a spinning visit is given: it reads nothing. */
export const OWNER_CONTEXT = { log: log("owner") } as unknown as ReconcileContext;
