/**
 * For worker_runner_process_test.ts: an operator in miniature that runs the spinner in its plugin host,
 * says its PID once the host spins, and waits to be killed.
 */
import { VisitDeadline } from "../visit_deadline.ts";
import { OWNER_CONTEXT, SPIN, spinnerRunner } from "./spinner_runner.ts";

const runner = spinnerRunner(60_000);
runner.reconcile(SPIN, OWNER_CONTEXT, new VisitDeadline(600_000, new AbortController().signal));
console.log(Deno.pid);
await new Promise(() => {});
