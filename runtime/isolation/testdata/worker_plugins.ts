/**
 * Plugins for worker_runner_process_test.ts: one that reads the cache and logs, one that spins, one that
 * allocates, one that prints.
 */
import { CONFIG_MAP, definePlugin, PermanentError } from "ptemplate-operator/mod.ts";

export const reader = definePlugin({
  name: "reader",
  for: CONFIG_MAP,
  reconcile: (object, context) => {
    const other = context.cache(CONFIG_MAP).get(object.metadata.namespace, "other");
    context.log.info("read {name}", { name: other?.metadata.name });
    context.metrics.counter("reader_visits_total", "visits").inc();
    if (object.metadata.name === "bad") throw new PermanentError("bad spec", { reason: "Bad" });
    return { status: { seen: other?.data?.value, installed: context.installed(CONFIG_MAP) } };
  },
});

export const spinner = definePlugin({
  name: "spinner",
  for: CONFIG_MAP,
  reconcile: async (object) => {
    if (object.metadata.name === "spin") { for (;;) { /* spins */ } }
    if (object.metadata.name === "hang") await new Promise(() => {});
    if (object.metadata.name === "slow") await new Promise((r) => setTimeout(r, 300));
    return { requeueAfterMs: 1 };
  },
});

export const allocator = definePlugin({
  name: "allocator",
  for: CONFIG_MAP,
  reconcile: () => {
    const hoard: number[][] = [];
    for (;;) hoard.push(new Array(100_000).fill(1));
  },
});

export const printer = definePlugin({
  name: "printer",
  for: CONFIG_MAP,
  reconcile: (object) => {
    console.log("a line for stdout, which goes to stderr");
    console.table([{ a: 1 }]);
    if (object.metadata.name === "raw") {
      Deno.stdout.writeSync(new TextEncoder().encode("straight to stdout\n"));
    }
    return { status: { printed: true } };
  },
});
