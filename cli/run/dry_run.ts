/**
 * `run --dry-run`: the operator over every object once, against the live cluster, beside the real
 * operator, changing nothing (runtime/reconcile/dry_run_report.ts says how), then a summary of what
 * it would change ("would change 31 of 10000 Ptemplate(s): 20 update Module, …") on stdout, and
 * object by object in a JSON file when asked. To rehearse an upgrade of the operator, a plugin's
 * change or a flag's before it happens.
 */
import type { DryRunReport, Manager } from "../../runtime/mod.ts";

/** Runs `manager` until every object has been visited once (or `signal`), then says what it found. */
export async function rehearse(
  manager: Manager,
  report: DryRunReport,
  options: { output: "text" | "json"; signal: AbortSignal },
): Promise<void> {
  const stop = new AbortController();
  options.signal.addEventListener("abort", () => stop.abort(), { once: true });
  const running = manager.run(stop.signal);
  // The controllers start once the caches have synced; firstPass waits for that too.
  await Promise.race([manager.firstPass(), running]);
  stop.abort();
  await running;
  const totals: Record<string, number> = {};
  for (const controller of manager.controllers) {
    const kind = controller.plugin.for.kind;
    totals[kind] = manager.pool.cache(controller.plugin.for).list().length;
  }
  const summary = report.summary(totals);
  if (options.output === "json") {
    console.log(JSON.stringify({ summary, objects: report.objects() }, null, 2));
    return;
  }
  for (const { object, changes } of report.objects()) {
    console.log(`would change ${object}:`);
    for (const c of changes) {
      console.log(
        `  ${c.verb} ${c.what}${c.detail ? ` (${c.detail})` : ""}` +
          (c.controller ? `  [${c.controller}]` : ""),
      );
    }
  }
  for (const line of summary) console.log(`dry run: ${line}`);
}
