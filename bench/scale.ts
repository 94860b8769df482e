/**
 * `deno task bench:scale`: the real operator, as its ServiceAccount with the permissions of
 * `deno task start`, against N Ptemplates on the harness's control plane, measured from the API
 * server's audit log and the process table, beside a raw client that creates the same objects
 * 16 at a time in the same run. Prints one table and writes the same as JSON. Not a test: its
 * numbers are the machine's, and only the ratios travel.
 *
 *   deno task bench:scale [--count 1000] [--nodes 0] [--unrelated-pods 0] [--replicas 1]
 *     [--shards] [--gate on|off] [--cpu-limit CORES] [--peer controller-runtime]
 *     [--peer-workers 1] [--cpu-prof] [--alloc-prof] [--perf] [--out file.json]
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
 *
 * `--peer controller-runtime` then runs a Ptemplate operator on controller-runtime v0.15
 * (bench/controller_runtime_peer.ts) twice, with its client's default rate limit and with ours,
 * each on a fresh control plane holding the same Ptemplates, measured the same way; the table and
 * the JSON's `peers` put its figures beside ours, as ratios. `--peer-workers N` gives it N
 * workers (controller-runtime's MaxConcurrentReconciles; its default is 1).
 *
 * `--cpu-prof` profiles the measured run's main thread (`deno run --cpu-prof`, written at its
 * exit) and prints where its time went (bench/cpu_profile.ts); sampling costs CPU of its own, so
 * take CPU figures from a run without it.
 *
 * `--alloc-prof` runs the measured operator under V8's sampling heap profiler
 * (bench/alloc_profile_main.ts), the garbage it made included, and prints which files and functions
 * allocated how much (bench/alloc_profile.ts; JSON `allocProfile`, one per replica).
 *
 * `--perf` records the measured run's process with Linux `perf`, every thread and native code as
 * well (bench/perf_record.ts), while the children are made and after, to quiet; it prints how
 * each stretch's CPU split between JavaScript, V8's and Deno's native code, the kernel and V8's
 * helper threads (JSON `perfStretches`). One replica only.
 */
import { parseArgs } from "node:util";
import { type AuditEvent, WRITE_VERBS } from "../testing/audit_log.ts";
import { installAllButDeployment, kustomize } from "../tests/fixtures/manifests.ts";
import {
  OperatorRun,
  permissionFlags,
  runtimeOptions,
  taskEnv,
} from "../tests/fixtures/operator_command.ts";
import { sleep } from "../util/sleep.ts";
import { measurePeer, peerConfigs, type PeerFigures } from "./controller_runtime_peer.ts";
import { CpuLimit } from "./cpu_limit.ts";
import { type ProfileSummary, summarizeCpuProfile } from "./cpu_profile.ts";
import { summarizeAllocProfile } from "./alloc_profile.ts";
import { profileTables, type Stretch } from "./profile_tables.ts";
import { checkPerf, PERF_V8_FLAG, PerfRecord } from "./perf_record.ts";
import { cpuOf, rssSampler, threadCpuOf } from "./process_stats.ts";
import {
  measureReference,
  populate,
  type ScaleCluster,
  startPlane,
  waitForChildren,
  waitForQuiet,
  writesOf,
} from "./scale_cluster.ts";
import {
  at,
  type Compared,
  isWork,
  percentile,
  perPtemplate,
  ratios,
  writeFigures,
} from "./scale_figures.ts";
import { peerRows, rowsOf } from "./scale_table.ts";

/** The operator's command line under the sampling heap profiler (`--alloc-prof`). */
const ALLOC_MAIN = new URL("./alloc_profile_main.ts", import.meta.url).pathname;

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
    peer: { type: "string" },
    "peer-workers": { type: "string", default: "1" },
    "cpu-prof": { type: "boolean", default: false },
    "alloc-prof": { type: "boolean", default: false },
    perf: { type: "boolean", default: false },
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
if (values.peer !== undefined && values.peer !== "controller-runtime") {
  throw new Error(`--peer takes controller-runtime (the only peer), not ${values.peer}`);
}
const PEER_WORKERS = Number(values["peer-workers"]);
if (!Number.isInteger(PEER_WORKERS) || PEER_WORKERS < 1) {
  throw new Error(
    `--peer-workers must be a whole number of at least 1, not ${values["peer-workers"]}`,
  );
}
if (values.perf && REPLICAS > 1) {
  throw new Error("--perf records one process: run it with --replicas 1");
}
if (values.perf) await checkPerf();
const CLUSTER: ScaleCluster = { count: COUNT, nodes: NODES, unrelatedPods: UNRELATED, gate: GATE };
const SA = "system:serviceaccount:ptemplate-operator-system:ptemplate-operator";

const say = (line: string) => console.error(`bench: ${line}`);

const plane = await startPlane(CLUSTER, say);
const result: Record<string, unknown> = {
  command: `deno task bench:scale --count ${COUNT} --nodes ${NODES} --unrelated-pods ${UNRELATED}` +
    ` --replicas ${REPLICAS}${SHARDED ? " --shards" : ""} --gate ${GATE ? "on" : "off"}` +
    (CPU_LIMIT === undefined ? "" : ` --cpu-limit ${CPU_LIMIT}`) +
    (values.peer ? ` --peer ${values.peer} --peer-workers ${PEER_WORKERS}` : "") +
    (values["cpu-prof"] ? " --cpu-prof" : "") + (values["alloc-prof"] ? " --alloc-prof" : "") +
    (values.perf ? " --perf" : ""),
  date: new Date().toISOString(),
  deno: Deno.version.deno,
  // The operator's V8 flags trade CPU for memory (bench/README.md, "V8's flags"): a result names
  // the ones it ran with.
  v8Flags: permissionFlags("start").find((flag) => flag.startsWith("--v8-flags=")),
  // And the runtime's own options (`--no-code-cache`).
  runtimeOptions: runtimeOptions("start"),
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
  const start = async (profileDir?: string, perf = false, allocDir?: string) => {
    const limits = CPU_LIMIT === undefined ? [] : await Promise.all(
      Array.from(
        { length: REPLICAS },
        (_, i) => CpuLimit.create(`ptemplate-bench-${Deno.pid}-${i}`, CPU_LIMIT),
      ),
    );
    const spawned = Date.now();
    const fleet = Array.from({ length: REPLICAS }, (_, i) => {
      const limit: CpuLimit | undefined = limits[i];
      const operator = OperatorRun.start(operatorArgs, {
        launcher: limit?.launcher,
        denoFlags: [
          ...profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}/${i}`] : [],
          ...perf ? [PERF_V8_FLAG] : [],
          // node:inspector asks for sys access "inspector", which no --allow-sys list can name.
          ...allocDir ? ["--allow-sys", `--allow-write=${allocDir}`] : [],
        ],
        entry: allocDir ? [ALLOC_MAIN, `${allocDir}/${i}.heapprofile`] : undefined,
      });
      return { operator, limit, rss: rssSampler(operator.child.pid) };
    });
    for (const { operator } of fleet) {
      let exited = false;
      operator.child.status.finally(() => exited = true);
      while (!operator.lines.some((l) => l.msg === "caches synced")) {
        // An operator that refused its flags or crashed says why, rather than a wait for ever.
        if (exited) {
          const last = operator.lines.slice(-5).map((l) => l.msg).join("\n");
          throw new Error(`an operator exited before its caches synced:\n${last}`);
        }
        await sleep(50);
      }
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
        /** Every replica's log lines so far. */
        get lines() {
          return fleet.flatMap((f) => f.operator.lines);
        },
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

  await populate(plane, CLUSTER, say);

  // The operator, from start to quiet.
  const planeBefore = await cpuOf(plane.pids());
  const profileDir = values["cpu-prof"]
    ? await Deno.makeTempDir({ prefix: "ptemplate-cpu-prof-" })
    : undefined;
  const allocDir = values["alloc-prof"]
    ? await Deno.makeTempDir({ prefix: "ptemplate-alloc-prof-" })
    : undefined;
  const { operator, rss, spawned } = await start(profileDir, values.perf, allocDir);
  const perfDir = values.perf ? await Deno.makeTempDir({ prefix: "ptemplate-perf-" }) : undefined;
  // Under --perf, one recording a stretch: started by `record`, the latest stopped by `stopRecord`.
  const recordings: { stretch: string; perf: PerfRecord }[] = [];
  const record = (stretch: string) => {
    if (!perfDir) return;
    const perf = PerfRecord.start({ pid: operator.pids[0], file: `${perfDir}/${stretch}` });
    recordings.push({ stretch, perf });
  };
  const stopRecord = () => recordings.at(-1)?.perf.stop();
  record("while the children are made");
  const started = Date.now();
  await waitForChildren(admin, COUNT);
  await stopRecord();
  record("then until the cluster settled");
  // Where the two cores went while the children were made (the control plane: API server,
  // etcd, controller manager), against the same for the raw client below.
  result.childrenCpu = {
    seconds: (Date.now() - started) / 1000,
    controlPlane: await cpuOf(plane.pids()) - planeBefore,
    operator: await cpuOf(operator.pids),
    // Each replica's threads: the main thread (JavaScript, and Deno's I/O), V8's helpers.
    threads: await Promise.all(operator.pids.map(threadCpuOf)),
    // Under --cpu-limit: the share of each replica's 100 ms periods its quota cut short.
    throttled: CPU_LIMIT === undefined
      ? undefined
      : (await operator.throttled()).map((t) =>
        Math.round(t.throttledPeriods / Math.max(1, t.periods) * 100) / 100
      ),
  };
  say(`children exist after ${((Date.now() - started) / 1000).toFixed(1)} s; waiting for quiet`);
  await waitForQuiet(plane, SA);
  await stopRecord();
  result.peakRssMiB = rss.peak;
  result.settledRssMiB = rss.last;
  result.replicaRssMiB = rss.each;
  result.cpuSeconds = await cpuOf(operator.pids);
  result.threadCpu = await Promise.all(operator.pids.map(threadCpuOf));
  result.perPtemplate = perPtemplate(await operator.metrics(), COUNT);
  const quietAt = Date.now();
  await sleep(20_000);
  result.writesWhileIdle = (await writesOf(plane, SA)).filter((e) => at(e) > quietAt).length;
  await rss.stop();
  await operator.stop();
  if (allocDir) {
    // Written by each replica as it exited.
    const root = new URL("../", import.meta.url).href;
    result.allocProfile = await Promise.all(
      Array.from({ length: REPLICAS }, async (_, i) => {
        const profile = JSON.parse(await Deno.readTextFile(`${allocDir}/${i}.heapprofile`));
        return summarizeAllocProfile(profile, { root, top: 25 });
      }),
    );
    await Deno.remove(allocDir, { recursive: true });
  }
  if (perfDir) {
    const root = new URL("../", import.meta.url).href;
    const splits = [];
    for (const { stretch, perf } of recordings) splits.push({ stretch, ...await perf.split(root) });
    result.perfStretches = splits;
    await Deno.remove(perfDir, { recursive: true });
    await Deno.remove(`/tmp/perf-${operator.pids[0]}.map`).catch(() => {});
  }
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
  // The Leases' renewals, apart: with --replicas they never stop, by design.
  const leaseWrites = mine.filter((e) => WRITE_VERBS.has(e.verb) && !isWork(e));
  result.leaseWritesPerMinute = leaseWrites.length /
    Math.max(1, (Math.max(...leaseWrites.map(at)) - first) / 60_000);
  Object.assign(result, writeFigures(audit, { username: SA, since: first, count: COUNT }));
  if (profileDir) {
    // Seconds after the start: every child exists, then the operator's last write (the statuses
    // end); after it, the DaemonSet controller's status changes still reach it until quiet.
    const childrenAt = (started - spawned) / 1000 +
      (result.childrenCpu as { seconds: number }).seconds;
    const lastWriteAt = (Math.max(...mine.filter(isWork).map(at)) - spawned) / 1000;
    result.cpuProfile = await profilesIn(profileDir);
    result.cpuProfileStretches = [
      { stretch: "while the children are made", toSeconds: childrenAt },
      {
        stretch: "then to the operator's last write",
        fromSeconds: childrenAt,
        toSeconds: lastWriteAt,
      },
      { stretch: "then until the cluster settled", fromSeconds: lastWriteAt },
    ];
    for (const stretch of result.cpuProfileStretches as Stretch[]) {
      stretch.profiles = await profilesIn(profileDir, stretch);
    }
  }

  // Our last status write after the DaemonSet controller's last status write, per Ptemplate.
  const lastWrite = (filter: (e: AuditEvent) => boolean) => {
    const last = new Map<string, number>();
    for (const e of audit.filter(filter)) last.set(e.objectRef!.name!, at(e));
    return last;
  };
  const byDaemonSetController = (e: AuditEvent) =>
    e.objectRef?.resource === "daemonsets" && e.objectRef.subresource === "status" &&
    e.objectRef.namespace === "scale" && WRITE_VERBS.has(e.verb) && e.user.username !== SA;
  // Each of them reaches every operator as a watch event, most of them after its last write.
  result.daemonSetStatusWrites = audit.filter(byDaemonSetController).length;
  const dsStatus = lastWrite(byDaemonSetController);
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
    result.writesAfterRestart = (await writesOf(plane, SA)).filter((e) => at(e) > restarted)
      .length;
    await rss.stop();
    await operator.stop();
  }

  // The reference: the same 2N objects from a plain client, 16 at a time.
  const reference = await measureReference(plane, CLUSTER);
  result.referenceSeconds = reference.seconds;
  result.referenceCpu = reference;
  result.childrenRatio = (result.childrenSeconds as number) / (result.referenceSeconds as number);
} finally {
  await plane.stop();
}

// The peer, each of its runs on a control plane of its own that holds what ours met.
if (values.peer) {
  const peers: (PeerFigures & { ratios: Compared })[] = [];
  for (const config of peerConfigs(PEER_WORKERS)) {
    const figures = await measurePeer(config, CLUSTER, say);
    peers.push({ ...figures, ratios: ratios(result as unknown as Compared, figures) });
    say(`${config.name}: children after ${figures.childrenSeconds.toFixed(1)} s`);
  }
  result.peers = peers;
}

console.log(`\n${result.command}\n`);
console.log("| measure | value | beside it |\n| --- | --- | --- |");
for (const row of rowsOf(result)) console.log(`| ${row.join(" | ")} |`);
if (values.peer) {
  const peers = result.peers as PeerFigures[];
  console.log(`\n| measure | ours | ${peers.map((p) => p.name).join(" | ")} |`);
  console.log(`| --- | --- | ${peers.map(() => "---").join(" | ")} |`);
  for (const row of peerRows(result)) console.log(`| ${row.join(" | ")} |`);
}
for (const line of profileTables(result, COUNT)) console.log(line);
if (values.out) {
  await Deno.writeTextFile(values.out, JSON.stringify(result, null, 2) + "\n");
  say(`wrote ${values.out}`);
}

/**
 * The summary of each replica's main-thread profile, written at its exit (`--cpu-prof`), over
 * `window` (seconds after its start; the whole profile by default).
 */
async function profilesIn(
  dir: string,
  window: { fromSeconds?: number; toSeconds?: number } = {},
): Promise<({ file: string } & ProfileSummary)[]> {
  const summaries = [];
  for (let i = 0; i < REPLICAS; i++) {
    for await (const entry of Deno.readDir(`${dir}/${i}`)) {
      if (!entry.name.endsWith(".cpuprofile")) continue;
      const file = `${dir}/${i}/${entry.name}`;
      const profile = JSON.parse(await Deno.readTextFile(file));
      const root = new URL("../", import.meta.url).href;
      summaries.push({ file, ...summarizeCpuProfile(profile, { root, top: 20, ...window }) });
    }
  }
  return summaries;
}
