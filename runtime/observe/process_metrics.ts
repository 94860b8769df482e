/**
 * The `process_*` series every Go operator exports (resident memory, CPU seconds, open file
 * descriptors, start time), read from the Deno runtime when Prometheus scrapes.
 */
import process from "node:process";
import type { Registry } from "./metrics.ts";

/**
 * Open file descriptors: exact from /proc/self/fd where the process may read it, which Deno
 * allows only with --allow-all; otherwise the handles in the runtime's resource table (files,
 * sockets, listeners, pipes opened from JavaScript), which is what leaks when code forgets to
 * close something, though not the runtime's own pooled connections.
 */
function openFds(): number | undefined {
  try {
    return [...Deno.readDirSync("/proc/self/fd")].length;
  } catch {
    // not permitted (or not Linux): fall back to the resource table
  }
  try {
    const internal = (Deno as unknown as Record<symbol | string, unknown>)[
      (Deno as unknown as { internal: symbol }).internal
    ] as { core?: { resources?: () => Record<string, string> } } | undefined;
    const resources = internal?.core?.resources?.();
    return resources ? Object.keys(resources).length : undefined;
  } catch {
    return undefined;
  }
}

/** Registers the process series on `registry`; they are sampled at every scrape. */
export function exposeProcessMetrics(registry: Registry): void {
  const memory = registry.gauge("process_resident_memory_bytes", "Resident memory size in bytes.");
  const heap = registry.gauge(
    "process_heap_bytes",
    "Bytes of the JavaScript heap in use (V8's heapUsed).",
  );
  const cpu = registry.counter(
    "process_cpu_seconds_total",
    "Total user and system CPU time spent in seconds.",
  );
  const fds = registry.gauge(
    "process_open_fds",
    "Number of open file descriptors (from /proc/self/fd where readable, else the runtime's " +
      "open resources).",
  );
  const start = registry.gauge(
    "process_start_time_seconds",
    "Start time of the process since unix epoch in seconds.",
  );
  start.set({}, Math.floor(performance.timeOrigin / 1000));
  registry.onCollect(() => {
    const usage = Deno.memoryUsage();
    memory.set({}, usage.rss);
    heap.set({}, usage.heapUsed);
    const { user, system } = process.cpuUsage();
    const seconds = (user + system) / 1e6;
    cpu.inc({}, Math.max(0, seconds - cpu.get()));
    const open = openFds();
    if (open !== undefined) fds.set({}, open);
  });
}
