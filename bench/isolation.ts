/**
 * `deno task bench:isolation`: what a Worker in a process of its own (a plugin host) costs a
 * plugin. The status aggregator (the flagship
 * plugin that reads most: its Ptemplate, Module, DaemonSet, pods, nodes, `installed`, `problems`,
 * a metric) reconciles N Ptemplates from a cache of N Ptemplates, N DaemonSets and N Modules (a
 * converged world: each read is of one object, not a list), once
 * in this isolate and once in a Worker, sequentially and 8 at a time; then 8 Workers are started
 * to weigh one: what the operator's RSS grew by, plus each host process's own RSS and PSS (its
 * share of pages it shares with the others, such as the deno executable's). The API server is left out: its cost is the same either way. Prints one table and
 * writes the same as JSON. Not a test: only the ratios travel.
 *
 *   deno task bench:isolation [--count 1000] [--out bench/results/isolation.json] [--host main]
 *
 * `--host main` starts each plugin host as the compiled binary does, `main.ts plugin-host` (the
 * whole operator's modules load in it), rather than the host module alone (`deno run`'s way).
 */
import { parseArgs } from "node:util";
import { MODULE } from "../crds/kmm_module.ts";
import { PTEMPLATE, type Ptemplate } from "../crds/ptemplate.ts";
import { DAEMON_SET } from "../kube/kinds.ts";
import type { KubeObject, Stored } from "../kube/object.ts";
import type { Resource } from "../kube/resource.ts";
import { daemonSetFor, moduleFor, statusAggregatorPlugin } from "../reconcilers/mod.ts";
import {
  hostUnderDenoRun,
  inProcessRunner,
  type PluginRunner,
  type ReconcileContext,
  Registry,
  Store,
  VisitDeadline,
  workerRunner,
} from "../runtime/mod.ts";
import { childProcesses } from "../testing/process.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    count: { type: "string", default: "1000" },
    out: { type: "string" },
    host: { type: "string", default: "module" },
  },
});
const COUNT = Number(values.count);
const HOST = values.host === "main"
  ? {
    command: Deno.execPath(),
    args: [
      "run",
      "--allow-read",
      "--allow-env",
      new URL("../main.ts", import.meta.url).pathname,
      "plugin-host",
    ],
  }
  : hostUnderDenoRun([]);
const WORKERS = 8;
const say = (line: string) => console.log(`bench: ${line}`);

const quiet = {
  trace() {},
  debug() {},
  info() {},
  warn() {},
  warning() {},
  error() {},
  fatal() {},
  with: () => quiet,
};

const stores = new Map<string, Store<KubeObject>>();
const storeOf = (resource: Resource) => {
  const key = `${resource.group}/${resource.kind}`;
  if (!stores.has(key)) stores.set(key, new Store(resource));
  return stores.get(key)!;
};
const ptemplates: Stored<Ptemplate, true>[] = [];
for (let i = 0; i < COUNT; i++) {
  const pt = {
    apiVersion: "pt.example.com/v1alpha1",
    kind: "Ptemplate",
    metadata: {
      name: `pt-${i}`,
      namespace: `ns-${i % 10}`,
      uid: `uid-${i}`,
      resourceVersion: String(i + 1),
      generation: 1,
    },
    spec: { selector: { role: "worker" }, maxdev: 5, requiredDevices: 1 },
  } as unknown as Stored<Ptemplate, true>;
  ptemplates.push(pt);
  storeOf(PTEMPLATE).upsert(pt);
  const owner = [{
    apiVersion: "pt.example.com/v1alpha1",
    kind: "Ptemplate",
    name: pt.metadata.name,
    uid: pt.metadata.uid,
    controller: true,
  }];
  for (
    const [resource, child] of [[DAEMON_SET, daemonSetFor(pt)], [MODULE, moduleFor(pt)]] as const
  ) {
    storeOf(resource).upsert({
      ...child,
      // Converged: each controller has seen its child (no first-status wait, which lists them all).
      status: { observedGeneration: 1, desiredNumberScheduled: 0, numberReady: 0 },
      metadata: {
        ...child.metadata,
        generation: 1,
        namespace: pt.metadata.namespace,
        uid: `${resource.kind}-${i}`,
        resourceVersion: "1",
        ownerReferences: owner,
      },
    } as unknown as KubeObject);
  }
}

const registry = new Registry();
const context = {
  client: new Proxy({}, { get: () => () => Promise.reject(new Error("no client in the bench")) }),
  cache: storeOf,
  installed: () => true,
  problems: () => [],
  log: quiet,
  events: { record() {} },
  metrics: registry,
  signal: new AbortController().signal,
} as unknown as ReconcileContext;

const never = new AbortController().signal;
const visit = (runner: PluginRunner, pt: Stored<Ptemplate, true>) => {
  const deadline = new VisitDeadline(60_000, never);
  return runner.reconcile(pt as Stored<KubeObject>, context, deadline).finally(() =>
    deadline.end()
  );
};

/** Milliseconds per reconcile, all N visited `width` at a time. */
async function perReconcile(runner: PluginRunner, width: number): Promise<number> {
  const started = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < ptemplates.length) await visit(runner, ptemplates[next++]);
  }));
  return (performance.now() - started) / ptemplates.length;
}

function workerOf() {
  return workerRunner(statusAggregatorPlugin, {
    host: HOST,
    url: new URL("../reconcilers/mod.ts", import.meta.url).href,
    exportName: "statusAggregatorPlugin",
    heapLimitMb: 256,
    callTimeoutMs: 60_000,
    log: quiet as never,
    metrics: registry,
  });
}

const rss = () => Deno.memoryUsage().rss / 2 ** 20;

/** The RSS and PSS of this process's plugin hosts, in MiB, summed. */
async function hostsMemory(): Promise<{ rss: number; pss: number }> {
  const hosts = (await childProcesses(Deno.pid)).filter((p) => /plugin[-_]host/.test(p.command));
  const { stdout } = await new Deno.Command("sh", {
    args: ["-c", hosts.map((h) => `cat /proc/${h.pid}/smaps_rollup`).join(";")],
    stdout: "piped",
  }).output();
  const text = new TextDecoder().decode(stdout);
  const sum = (field: string) =>
    [...text.matchAll(new RegExp(`^${field}:\\s+(\\d+) kB`, "gm"))]
      .reduce((total, [, kb]) => total + Number(kb), 0) / 1024;
  return { rss: sum("Rss"), pss: sum("Pss") };
}
const inProcess = inProcessRunner(statusAggregatorPlugin);
const worker = workerOf();
// Warm both (JIT, module load, the Worker's start) before measuring.
say(`warming up on ${COUNT} Ptemplates`);
await perReconcile(inProcess, 1);
const startedAt = performance.now();
await visit(worker, ptemplates[0]);
const firstCallMs = performance.now() - startedAt;
await perReconcile(worker, 1);

const rows = [];
for (const width of [1, 8]) {
  const inMs = await perReconcile(inProcess, width);
  const workerMs = await perReconcile(worker, width);
  rows.push({ concurrency: width, inProcessMs: inMs, workerMs, ratio: workerMs / inMs });
}
await worker.close();

(globalThis as { gc?: () => void }).gc?.();
const before = rss();
const extra = Array.from({ length: WORKERS }, workerOf);
await Promise.all(extra.map((runner) => visit(runner, ptemplates[0])));
const after = rss();
const hosts = await hostsMemory();
await Promise.all(extra.map((runner) => runner.close()));
const perWorkerMiB = (after - before) / WORKERS;

const result = {
  command: `deno task bench:isolation --count ${COUNT}${values.out ? ` --out ${values.out}` : ""}${
    values.host === "main" ? " --host main" : ""
  }`,
  deno: Deno.version.deno,
  objects: COUNT,
  perReconcile: rows.map((r) => ({
    concurrency: r.concurrency,
    inProcessUs: Math.round(r.inProcessMs * 1000),
    workerUs: Math.round(r.workerMs * 1000),
    workerOverInProcess: Math.round(r.ratio * 10) / 10,
  })),
  worker: {
    firstCallMs: Math.round(firstCallMs),
    // What one more isolated plugin costs: the operator's growth and its host's PSS.
    rssPerWorkerMiB: Math.round((perWorkerMiB + hosts.pss / WORKERS) * 10) / 10,
    operatorRssPerWorkerMiB: Math.round(perWorkerMiB * 10) / 10,
    hostRssMiB: Math.round((hosts.rss / WORKERS) * 10) / 10,
    hostPssMiB: Math.round((hosts.pss / WORKERS) * 10) / 10,
    rssBeforeWorkersMiB: Math.round(before),
    perWorkerOverOperatorRss: Math.round(((perWorkerMiB + hosts.pss / WORKERS) / before) * 100) /
      100,
  },
};
console.table(result.perReconcile);
console.table([result.worker]);
if (values.out) await Deno.writeTextFile(values.out, JSON.stringify(result, null, 2) + "\n");
