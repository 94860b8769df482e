/**
 * For worker_runner_process_test.ts: an operator in miniature that runs the spinner in its plugin host,
 * says its PID once the host spins, and waits to be killed.
 */
import { log, Registry } from "../../observe/mod.ts";
import type { KubeObject, Stored } from "../../../kube/object.ts";
import type { ReconcileContext } from "../../plugin/mod.ts";
import { hostUnderDenoRun } from "../plugin_host.ts";
import { VisitDeadline } from "../visit_deadline.ts";
import { workerRunner } from "../worker_runner.ts";
import { spinner } from "./worker_plugins.ts";

const runner = workerRunner(spinner, {
  host: hostUnderDenoRun([new URL("./", import.meta.url).pathname]),
  url: new URL("./worker_plugins.ts", import.meta.url).href,
  exportName: "spinner",
  heapLimitMb: 32,
  callTimeoutMs: 60_000,
  log: log("owner"),
  metrics: new Registry(),
});
const spin = {
  metadata: { name: "spin", namespace: "ns", uid: "spin", resourceVersion: "1" },
} as Stored<KubeObject>;
const context = { log: log("owner") } as unknown as ReconcileContext;
runner.reconcile(spin, context, new VisitDeadline(600_000, new AbortController().signal));
console.log(Deno.pid);
await new Promise(() => {});
