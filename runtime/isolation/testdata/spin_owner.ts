/**
 * For worker_runner_process_test.ts: an operator in miniature, alone in its process (a test
 * process runs other test files' threads beside it), whose plugin spins past its deadline. Says
 * how the call ended, as one JSON line, then waits to be killed: the test watches its threads.
 */
import { ReconcileTimeoutError, VisitDeadline } from "../visit_deadline.ts";
import { OWNER_CONTEXT, SPIN, spinnerRunner } from "./spinner_runner.ts";

const runner = spinnerRunner(2_000);
const deadline = new VisitDeadline(3_000, new AbortController().signal);
const ended = await runner.reconcile(SPIN, OWNER_CONTEXT, deadline).then(
  () => "returned",
  (error) => error instanceof ReconcileTimeoutError ? "timeout" : String(error),
);
console.log(JSON.stringify({ ended }));
// Nothing else keeps the event loop alive now that the host is gone.
setInterval(() => {}, 60_000);
