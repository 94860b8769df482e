/**
 * For worker_runner_process_test.ts: an operator in miniature, alone in its process (a test
 * process runs other test files' threads beside it), whose plugin spins past its deadline. Prints
 * one JSON line: how the call ended, whether its plugin host is gone, and the most CPU ticks any
 * thread of this process gained over the 2 s after that.
 */
import { eventually } from "../../../testing/eventually.ts";
import { busiestThread, childProcesses, threadCpuTicks } from "../../../testing/process.ts";
import { sleep } from "../../../util/sleep.ts";
import { ReconcileTimeoutError, VisitDeadline } from "../visit_deadline.ts";
import { OWNER_CONTEXT, SPIN, spinnerRunner } from "./spinner_runner.ts";

const runner = spinnerRunner(2_000);
const hosts = async () =>
  (await childProcesses(Deno.pid)).filter((p) => p.command.includes("plugin_host.ts"));
try {
  const deadline = new VisitDeadline(3_000, new AbortController().signal);
  const ended = await runner.reconcile(SPIN, OWNER_CONTEXT, deadline)
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
