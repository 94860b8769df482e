/**
 * For worker_runner_process_test.ts: an operator in miniature, alone in its process (a test
 * process runs other test files' threads beside it), whose plugin spins past its deadline. Prints
 * one JSON line: how the call ended, whether its plugin host is gone, and the most CPU ticks any
 * thread of this process gained over the 2 s after that.
 */
import { eventually } from "../../../testing/eventually.ts";
import { busiestThread, childProcesses, threadCpuTicks } from "../../../testing/process.ts";
import { sleep } from "../../../util/sleep.ts";
import type { KubeObject, Stored } from "../../../kube/object.ts";
import { log, Registry } from "../../observe/mod.ts";
import type { ReconcileContext } from "../../plugin/mod.ts";
import { hostUnderDenoRun } from "../plugin_host.ts";
import { ReconcileTimeoutError, VisitDeadline } from "../visit_deadline.ts";
import { workerRunner } from "../worker_runner.ts";
import { spinner } from "./worker_plugins.ts";

const runner = workerRunner(spinner, {
  host: hostUnderDenoRun([new URL("./", import.meta.url).pathname]),
  url: new URL("./worker_plugins.ts", import.meta.url).href,
  exportName: "spinner",
  heapLimitMb: 32,
  callTimeoutMs: 2_000,
  log: log("owner"),
  metrics: new Registry(),
});
const spin = {
  metadata: { name: "spin", namespace: "ns", uid: "spin", resourceVersion: "1" },
} as Stored<KubeObject>;
const context = { log: log("owner") } as unknown as ReconcileContext;
const hosts = async () =>
  (await childProcesses(Deno.pid)).filter((p) => p.command.includes("plugin_host.ts"));
try {
  const ended = await runner.reconcile(
    spin,
    context,
    new VisitDeadline(3_000, new AbortController().signal),
  )
    .then(
      () => "returned",
      (error) => error instanceof ReconcileTimeoutError ? "timeout" : String(error),
    );
  await eventually(async () => {
    if ((await hosts()).length) throw new Error("the plugin host still runs");
  }, { timeoutMs: 30_000 });
  const before = await threadCpuTicks(Deno.pid);
  await sleep(2_000);
  const busiest = busiestThread(before, await threadCpuTicks(Deno.pid));
  console.log(JSON.stringify({ ended, hostGone: (await hosts()).length === 0, busiest }));
} finally {
  await runner.close();
}
