/**
 * `deno task bench:scale`: the real operator, as its ServiceAccount with the permissions of
 * `deno task start`, against N Ptemplates on the harness's control plane, measured from the API
 * server's audit log and the process table, beside a raw client that creates the same objects
 * 16 at a time in the same run. Prints one table and writes the same as JSON. Not a test: its
 * numbers are the machine's, and only the ratios travel.
 *
 *   deno task bench:scale [--count 1000] [--nodes 0] [--unrelated-pods 0] [--replicas 1]
 *     [--shards] [--gate on|off] [--cpu-limit CORES] [--out file.json]
 *
 * `--replicas R` runs R operator processes with leader election (one works, the others stand
 * by); with `--shards` they split the work in R shards (`run --shards R`), on an API server
 * whose ShardedListAndWatch gate is on (`--gate off`: off, the caches filter alone). Memory is
 * then per replica: the peak is the largest replica's.
 *
 * `--cpu-limit 0.25` puts each replica under a CPU limit of its own, as the Deployment's
 * `limits.cpu` does (bench/cpu_limit.ts; it needs a cgroup CPU controller it may write). On a
 * small machine the replicas otherwise share its cores with the control plane, whose work is the
 * same however many replicas there are; under a limit, what each replica can do bounds them.
 */
import { parseArgs } from "node:util";
import { KMM_MODULE_CRD_FILE, MODULE } from "../crds/kmm_module.ts";
import { PTEMPLATE } from "../crds/ptemplate.ts";
import type { KubeClient } from "../kube/client.ts";
import type { Unstructured } from "../kube/object.ts";
import { DAEMON_SET, NAMESPACE, POD } from "../kube/kinds.ts";
import type { Resource } from "../kube/resource.ts";
import { daemonSetFor, moduleFor } from "../reconcilers/mod.ts";
import { type AuditEvent, WRITE_VERBS } from "../testing/audit_log.ts";
import { ControlPlane } from "../testing/control_plane.ts";
import { installAllButDeployment, kustomize } from "../tests/fixtures/manifests.ts";
import { OperatorRun, permissionFlags, taskEnv } from "../tests/fixtures/operator_command.ts";
import { sleep } from "../util/sleep.ts";
import { CpuLimit } from "./cpu_limit.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    count: { type: "string", default: "1000" },
    nodes: { type: "string", default: "0" },
    "unrelated-pods": { type: "string", default: "0" },
    replicas: { type: "string", default: "1" },
    shards: { type: "boolean", default: false },
    gate: { type: "string", default: "on" },
    "cpu-limit": { type: "string" },
    out: { type: "string" },
  },
});
const COUNT = Number(values.count);
const NODES = Number(values.nodes);
const UNRELATED = Number(values["unrelated-pods"]);
const REPLICAS = Number(values.replicas);
const SHARDED = values.shards;
const GATE = values.gate === "on";
const CPU_LIMIT = values["cpu-limit"] === undefined ? undefined : Number(values["cpu-limit"]);
if (CPU_LIMIT !== undefined && !(CPU_LIMIT > 0)) {
  throw new Error(
    `--cpu-limit must be a number of cores above 0 (0.25, say), not ${values["cpu-limit"]}`,
  );
}
if (!Number.isInteger(REPLICAS) || REPLICAS < 1) throw new Error("--replicas must be 1 or more");
const SA = "system:serviceaccount:ptemplate-operator-system:ptemplate-operator";
const WIDTH = 16;

const at = (e: AuditEvent) => Date.parse(e.requestReceivedTimestamp);
/** A write of the operator's work: not of a Lease (leader election, a ring's shards). */
const isWork = (e: AuditEvent) => WRITE_VERBS.has(e.verb) && e.objectRef?.resource !== "leases";
const say = (line: string) => console.error(`bench: ${line}`);

/** Runs `work` for each of `count` items, `width` at a time. */
async function wide(count: number, width: number, work: (i: number) => Promise<unknown>) {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < count) await work(next++);
  }));
}

/** Objects of `resource` in `namespace`, counted without listing them all. */
async function count(client: KubeClient, resource: Resource, namespace: string) {
  const page = await client.list(resource, { namespace, limit: 1 });
  return page.items.length + (page.metadata.remainingItemCount ?? 0);
}

/** The resident set of a process, from `ps`, in MiB (0 once it is gone). */
async function rssOf(pid: number): Promise<number> {
  const { stdout } = await new Deno.Command("ps", {
    args: ["-o", "rss=", "-p", String(pid)],
    stdout: "piped",
    stderr: "null",
  }).output();
  return (Number(new TextDecoder().decode(stdout).trim()) || 0) / 1024;
}

/**
 * CPU seconds the processes have used so far, to the clock tick (Linux's 100 a second), from
 * `/proc` (read by `cat`: Deno asks for every permission before it reads `/proc` itself).
 */
async function cpuOf(pids: number[]): Promise<number> {
  const { stdout } = await new Deno.Command("cat", {
    args: pids.map((pid) => `/proc/${pid}/stat`),
    stdout: "piped",
    stderr: "null",
  }).output();
  let ticks = 0;
  for (const line of new TextDecoder().decode(stdout).split("\n")) {
    // utime and stime, after the command name (which may hold spaces) and its ")".
    const fields = line.split(") ")[1]?.split(" ");
    if (fields) ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / 100;
}

/** Samples a process's RSS every 250 ms until stopped; the peak and the last sample. */
function rssSampler(pid: number) {
  let peak = 0;
  let last = 0;
  let running = true;
  const sampling = (async () => {
    while (running) {
      const rssMiB = await rssOf(pid);
      if (rssMiB) {
        last = rssMiB;
        peak = Math.max(peak, rssMiB);
      }
      await sleep(250);
    }
  })();
  return {
    get peak() {
      return peak;
    },
    get last() {
      return last;
    },
    async stop() {
      running = false;
      await sampling;
    },
  };
}

/**
 * What the replicas did per Ptemplate, summed from their metrics: reconciles per controller,
 * queue adds, and requests by verb and code (watch events are what the caches took in).
 */
function perPtemplate(metrics: string): Record<string, number> {
  const sums: Record<string, number> = {};
  const wanted: [RegExp, (labels: Record<string, string>) => string][] = [
    [/^controller_runtime_reconcile_total$/, (l) => `reconciles ${l.controller} ${l.result}`],
    [/^workqueue_adds_total$/, (l) => `queue adds ${l.name} ${l.priority}`],
    [/^rest_client_requests_total$/, (l) => `requests ${l.method} ${l.code}`],
  ];
  for (const line of metrics.split("\n")) {
    const match = /^([a-z_]+)\{([^}]*)\} ([0-9.e+]+)$/.exec(line);
    if (!match) continue;
    const rule = wanted.find(([name]) => name.test(match[1]));
    if (!rule) continue;
    const labels = Object.fromEntries(
      [...match[2].matchAll(/([a-z_]+)="([^"]*)"/g)].map((m) => [m[1], m[2]]),
    );
    const key = rule[1](labels);
    sums[key] = (sums[key] ?? 0) + Number(match[3]);
  }
  return Object.fromEntries(
    Object.entries(sums).filter(([, n]) => n > 0).map((
      [k, n],
    ) => [k, Math.round(n / COUNT * 100) / 100]),
  );
}

function percentile(values: number[], p: number): number {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

const plane = await ControlPlane.start({
  controllerManager: true,
  scheduler: NODES > 0,
  kwok: NODES > 0,
  audit: true,
  featureGates: { ShardedListAndWatch: GATE },
  crds: [new URL("../crds/ptemplates.pt.example.com.yaml", import.meta.url), KMM_MODULE_CRD_FILE],
  progress: say,
});
const result: Record<string, unknown> = {
  command: `deno task bench:scale --count ${COUNT} --nodes ${NODES} --unrelated-pods ${UNRELATED}` +
    ` --replicas ${REPLICAS}${SHARDED ? " --shards" : ""} --gate ${GATE ? "on" : "off"}` +
    (CPU_LIMIT === undefined ? "" : ` --cpu-limit ${CPU_LIMIT}`),
  date: new Date().toISOString(),
  deno: Deno.version.deno,
  // The operator's V8 flags trade CPU for memory (bench/README.md, "V8's flags"): a result names
  // the ones it ran with.
  v8Flags: permissionFlags("start").find((flag) => flag.startsWith("--v8-flags=")),
  env: taskEnv("start"),
  count: COUNT,
  nodes: NODES,
  unrelatedPods: UNRELATED,
  replicas: REPLICAS,
  shards: SHARDED ? REPLICAS : undefined,
  shardedListAndWatchGate: GATE,
  cpuLimitPerReplica: CPU_LIMIT,
};
try {
  const admin = plane.client();
  // With shards, the overlay that grants the ring's Leases (deploy/shards).
  await installAllButDeployment(
    admin,
    await kustomize(plane.binaries.kubectl, SHARDED ? "deploy/shards" : "deploy"),
  );
  const identity = await plane.serviceAccountIdentity(
    "ptemplate-operator-system",
    "ptemplate-operator",
  );
  const operatorArgs = [
    "run",
    `--kubeconfig=${identity.kubeconfigPath}`,
    // Plain HTTP on loopback: scraped once the work is done, for what it did per Ptemplate.
    "--metrics-bind-address=127.0.0.1:0",
    "--health-probe-bind-address=0",
    ...(REPLICAS > 1 || SHARDED
      ? ["--leader-elect", "--leader-election-namespace=ptemplate-operator-system"]
      : []),
    ...(SHARDED ? [`--shards=${REPLICAS}`] : []),
  ];
  /**
   * Starts the replicas (each in a cgroup of its own under --cpu-limit, all made before any
   * replica starts, so that a refusal leaves no process behind); resolves once each has synced.
   */
  const start = async () => {
    const limits = CPU_LIMIT === undefined ? [] : await Promise.all(
      Array.from(
        { length: REPLICAS },
        (_, i) => CpuLimit.create(`ptemplate-bench-${Deno.pid}-${i}`, CPU_LIMIT),
      ),
    );
    const spawned = Date.now();
    const fleet = Array.from({ length: REPLICAS }, (_, i) => {
      const limit: CpuLimit | undefined = limits[i];
      const operator = OperatorRun.start(operatorArgs, { launcher: limit?.launcher });
      return { operator, limit, rss: rssSampler(operator.child.pid) };
    });
    for (const { operator } of fleet) {
      while (!operator.lines.some((l) => l.msg === "caches synced")) await sleep(50);
    }
    return {
      spawned,
      /** The largest replica's. */
      rss: {
        get peak() {
          return Math.max(...fleet.map((f) => f.rss.peak));
        },
        get last() {
          return Math.max(...fleet.map((f) => f.rss.last));
        },
        get each() {
          return fleet.map((f) => ({ peak: f.rss.peak, last: f.rss.last }));
        },
        stop: () => Promise.all(fleet.map((f) => f.rss.stop())),
      },
      operator: {
        lines: fleet.flatMap((f) => f.operator.lines),
        /** Every replica's /metrics, one text. */
        metrics: async () => {
          const texts = await Promise.all(fleet.map(async (f) => {
            const port = await f.operator.port("metrics");
            return await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
          }));
          return texts.join("\n");
        },
        pids: fleet.map((f) => f.operator.child.pid),
        /** How often each replica's CPU limit held it back, so far. */
        throttled: () => Promise.all(fleet.flatMap((f) => f.limit ? [f.limit.throttled()] : [])),
        stop: () =>
          Promise.all(fleet.map(async (f) => {
            await f.operator.stop();
            await f.limit?.remove();
          })),
      },
    };
  };

  // The same process against an empty cluster: the baseline for memory.
  {
    const { operator, rss } = await start();
    await sleep(5_000);
    result.emptyRssMiB = rss.last;
    await rss.stop();
    await operator.stop();
    say(`empty cluster: ${rss.last.toFixed(1)} MiB`);
  }

  for (const name of ["scale", "reference"]) {
    await admin.create(NAMESPACE, { metadata: { name } });
  }
  const selector: Record<string, string> = NODES ? { role: "worker" } : { pool: "none" };
  if (NODES) {
    await plane.createNodes(
      ...Array.from({ length: NODES }, (_, i) => ({ name: `w-${i}`, labels: selector })),
    );
  }
  if (UNRELATED) {
    for (let n = 0; n < 10; n++) {
      await admin.create(NAMESPACE, { metadata: { name: `unrelated-${n}` } });
    }
    await wide(UNRELATED, WIDTH, (i) =>
      admin.create(POD, {
        metadata: { name: `u-${i}`, namespace: `unrelated-${i % 10}`, labels: { app: "other" } },
        spec: {
          nodeSelector: { nowhere: "true" },
          containers: [{ name: "c", image: "registry.example/other:1" }],
        },
      }));
    say(`${UNRELATED} unrelated pods made`);
  }
  await wide(COUNT, WIDTH, (i) =>
    admin.create(PTEMPLATE, {
      metadata: { name: `pt-${i}`, namespace: "scale" },
      spec: { selector, maxdev: 4 },
    } as Unstructured));
  say(`${COUNT} Ptemplates made`);

  // The operator, from start to quiet.
  const planeBefore = await cpuOf(plane.pids());
  const { operator, rss, spawned } = await start();
  const started = Date.now();
  while (
    (await count(admin, MODULE, "scale")) < COUNT ||
    (await count(admin, DAEMON_SET, "scale")) < COUNT
  ) await sleep(500);
  // Where the two cores went while the children were made (the control plane: API server,
  // etcd, controller manager), against the same for the raw client below.
  result.childrenCpu = {
    seconds: (Date.now() - started) / 1000,
    controlPlane: await cpuOf(plane.pids()) - planeBefore,
    operator: await cpuOf(operator.pids),
    // Under --cpu-limit: the share of each replica's 100 ms periods its quota cut short.
    throttled: CPU_LIMIT === undefined
      ? undefined
      : (await operator.throttled()).map((t) =>
        Math.round(t.throttledPeriods / Math.max(1, t.periods) * 100) / 100
      ),
  };
  say(`children exist after ${((Date.now() - started) / 1000).toFixed(1)} s; waiting for quiet`);
  const ours = async () =>
    (await plane.auditEvents()).filter((e) => e.user.username === SA && isWork(e));
  for (;;) {
    await sleep(5_000);
    const writes = await ours();
    if (!writes.length || Date.now() - at(writes.at(-1)!) > 5_000) break;
  }
  result.peakRssMiB = rss.peak;
  result.settledRssMiB = rss.last;
  result.replicaRssMiB = rss.each;
  result.cpuSeconds = await cpuOf(operator.pids);
  result.perPtemplate = perPtemplate(await operator.metrics());
  const quietAt = Date.now();
  await sleep(20_000);
  result.writesWhileIdle = (await ours()).filter((e) => at(e) > quietAt).length;
  await rss.stop();
  await operator.stop();
  if (Deno.env.get("BENCH_LOG")) {
    await Deno.writeTextFile(
      Deno.env.get("BENCH_LOG")!,
      operator.lines.map((l) => JSON.stringify(l)).join("\n") + "\n",
    );
  }

  const audit = await plane.auditEvents();
  // From the moment the process was started, as the operator's own user sees it.
  const first = spawned;
  const mine = audit.filter((e) => e.user.username === SA && at(e) >= first);
  const writes = mine.filter(isWork);
  // The Leases' renewals, apart: with --replicas they never stop, by design.
  const leaseWrites = mine.filter((e) => WRITE_VERBS.has(e.verb) && !isWork(e));
  result.leaseWritesPerMinute = leaseWrites.length /
    Math.max(1, (Math.max(...leaseWrites.map(at)) - first) / 60_000);
  const childCreates = writes.filter((e) =>
    e.verb === "create" && (e.objectRef?.resource === "modules" ||
      e.objectRef?.resource === "daemonsets") &&
    e.responseStatus?.code === 201
  );
  result.childrenSeconds = (Math.max(...childCreates.map(at)) - first) / 1000;
  // Of which the start: the process, its caches' first lists, up to its first child.
  result.firstChildSeconds = (Math.min(...childCreates.map(at)) - first) / 1000;
  result.quietSeconds = (at(writes.at(-1)!) - first) / 1000;
  const byKind: Record<string, number> = {};
  for (const e of writes) {
    const ref = e.objectRef!;
    const key = `${e.verb} ${ref.resource}${ref.subresource ? `/${ref.subresource}` : ""}`;
    byKind[key] = (byKind[key] ?? 0) + 1;
  }
  result.writes = byKind;
  // When the writes happened: per 5 s after the operator's first request, by resource.
  const timeline: Record<string, Record<string, number>> = {};
  for (const e of writes) {
    const bucket = `${Math.floor((at(e) - first) / 5_000) * 5}s`;
    const what = `${e.objectRef!.resource}${e.objectRef!.subresource ? "/status" : ""}`;
    timeline[bucket] ??= {};
    timeline[bucket][what] = (timeline[bucket][what] ?? 0) + 1;
  }
  result.writeTimeline = timeline;
  result.writesTotal = writes.length;
  result.writesPerPtemplate = writes.length / COUNT;

  // Our last status write after the DaemonSet controller's last status write, per Ptemplate.
  const lastWrite = (filter: (e: AuditEvent) => boolean) => {
    const last = new Map<string, number>();
    for (const e of audit.filter(filter)) last.set(e.objectRef!.name!, at(e));
    return last;
  };
  const dsStatus = lastWrite((e) =>
    e.objectRef?.resource === "daemonsets" && e.objectRef.subresource === "status" &&
    e.objectRef.namespace === "scale" && WRITE_VERBS.has(e.verb) && e.user.username !== SA
  );
  const ptStatus = lastWrite((e) =>
    e.objectRef?.resource === "ptemplates" && e.objectRef.subresource === "status" &&
    e.user.username === SA
  );
  const lags: number[] = [];
  const worst: [string, number, number][] = [];
  for (const [ds, when] of dsStatus) {
    const name = ds.replace(/-consumer$/, "");
    const ours = ptStatus.get(name);
    if (ours === undefined) continue;
    lags.push(Math.max(0, ours - when) / 1000);
    worst.push([name, (when - first) / 1000, (ours - first) / 1000]);
  }
  worst.sort((a, b) => (b[2] - b[1]) - (a[2] - a[1]));
  result.statusLagSeconds = {
    median: percentile(lags, 50),
    p99: percentile(lags, 99),
    max: Math.max(...lags),
    // The five that trailed most: name, then the DaemonSet controller's last status write and
    // ours, in seconds after the operator's first request.
    worst: worst.slice(0, 5),
  };

  // A restart over the converged state writes nothing.
  {
    const { operator, rss } = await start();
    const restarted = Date.now();
    await sleep(20_000);
    result.writesAfterRestart = (await ours()).filter((e) => at(e) > restarted).length;
    await rss.stop();
    await operator.stop();
  }

  // The reference: the same 2N objects from a plain client, 16 at a time.
  const referenceObjects = Array.from({ length: COUNT }, (_, i) => {
    const pt = {
      metadata: { name: `pt-${i}`, namespace: "reference", uid: crypto.randomUUID() },
      spec: { selector, maxdev: 4 },
    };
    return [moduleFor(pt), daemonSetFor(pt)] as const;
  }).flat();
  const referenceStarted = performance.now();
  const referencePlane = await cpuOf(plane.pids());
  const referenceClient = await cpuOf([Deno.pid]);
  await wide(referenceObjects.length, WIDTH, (i) => {
    const object = referenceObjects[i];
    return admin.create(object.kind === "Module" ? MODULE : DAEMON_SET, object as Unstructured);
  });
  result.referenceSeconds = (performance.now() - referenceStarted) / 1000;
  result.referenceCpu = {
    seconds: result.referenceSeconds,
    controlPlane: await cpuOf(plane.pids()) - referencePlane,
    client: await cpuOf([Deno.pid]) - referenceClient,
  };
  result.childrenRatio = (result.childrenSeconds as number) / (result.referenceSeconds as number);
} finally {
  await plane.stop();
}

/** CPU seconds used in a phase, by whom, and how long it took. */
interface PhaseCpu {
  seconds: number;
  controlPlane: number;
  operator?: number;
  client?: number;
  /** Under --cpu-limit, each replica's share of periods throttled. */
  throttled?: number[];
}

/** `control plane 60.1 s + operator 70.2 s in 54.1 s: 2.4 cores`. */
function cores(phase: PhaseCpu, other: "operator" | "client"): string {
  const theirs = phase[other] ?? 0;
  return `control plane ${phase.controlPlane.toFixed(1)} s + ${other} ${theirs.toFixed(1)} s ` +
    `in ${phase.seconds.toFixed(1)} s: ${
      ((phase.controlPlane + theirs) / phase.seconds).toFixed(2)
    } cores`;
}

const r = result as Record<string, number> & { statusLagSeconds: { median: number; p99: number } };
const rows = [
  [
    "all children exist",
    `${r.childrenSeconds.toFixed(1)} s`,
    `reference ${r.referenceSeconds.toFixed(1)} s, ratio ${r.childrenRatio.toFixed(2)}×; ` +
    `the first after ${r.firstChildSeconds.toFixed(1)} s`,
  ],
  ["quiet after", `${r.quietSeconds.toFixed(1)} s`, ""],
  [
    "writes",
    `${r.writesTotal} (${r.writesPerPtemplate.toFixed(2)} per Ptemplate)`,
    JSON.stringify(result.writes),
  ],
  [
    REPLICAS > 1 ? "peak RSS, largest replica" : "peak RSS",
    `${r.peakRssMiB.toFixed(1)} MiB`,
    `empty cluster ${r.emptyRssMiB.toFixed(1)} MiB, +${
      (r.peakRssMiB - r.emptyRssMiB).toFixed(1)
    } MiB`,
  ],
  [
    "settled RSS",
    `${r.settledRssMiB.toFixed(1)} MiB`,
    REPLICAS > 1
      ? `each replica's peak: ${
        (result.replicaRssMiB as { peak: number }[]).map((x) => x.peak.toFixed(1)).join(", ")
      } MiB`
      : "",
  ],
  ["CPU", `${r.cpuSeconds.toFixed(1)} s`, REPLICAS > 1 ? "all replicas" : ""],
  ...CPU_LIMIT === undefined ? [] : [[
    "CPU limit per replica",
    `${CPU_LIMIT} cores`,
    `throttled in ${
      (result.childrenCpu as PhaseCpu).throttled!.map((t) => `${Math.round(t * 100)}%`).join(", ")
    } of its periods until the children exist`,
  ]],
  [
    "CPU while the children are made",
    cores(result.childrenCpu as PhaseCpu, "operator"),
    `raw client: ${cores(result.referenceCpu as PhaseCpu, "client")}`,
  ],
  [
    "status lag",
    `median ${r.statusLagSeconds.median.toFixed(2)} s`,
    `p99 ${r.statusLagSeconds.p99.toFixed(2)} s`,
  ],
  ["writes idle 20 s / after a restart", `${r.writesWhileIdle} / ${r.writesAfterRestart}`, ""],
];
console.log(`\n${result.command}\n`);
console.log("| measure | value | beside it |\n| --- | --- | --- |");
for (const row of rows) console.log(`| ${row.join(" | ")} |`);
if (values.out) {
  await Deno.writeTextFile(values.out, JSON.stringify(result, null, 2) + "\n");
  say(`wrote ${values.out}`);
}
