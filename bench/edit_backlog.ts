/**
 * `deno task bench:backlog`: how long a person's edit waits while an operator works through a
 * backlog, with the priority queue on (`--priority-queue`, the default) and off
 * (`--priority-queue=false`), one after the other against the same control plane in one run.
 *
 *   deno task bench:backlog [--count 1000] [--rate 5] [--concurrency N]
 *     [--backlogs takeover,restart,resync] [--out file.json]
 *
 * N Ptemplates, converged by a first operator. Then, for each queue, three backlogs, each in a
 * fresh operator process (what a new leader does too: it lists everything and queues every key as
 * bulk work, `start`):
 * - `takeover`: every Ptemplate's spec.maxdev was changed while no operator ran, so every visit
 *   of the backlog writes a Module;
 * - `restart`: over the converged state, so every visit of the backlog writes nothing;
 * - `resync`: the periodic resync of a running operator (`--resync-period`), over the converged
 *   state once its start's backlog has drained: every key queued again as bulk work, in a process
 *   whose watches were open all along.
 * From the moment its caches have synced (or the resync began) until its queues report the
 * backlog drained (bench/queue_metrics.ts), the bench makes `--rate` changes a second: three of
 * four set one Ptemplate's spec.maxdev, the fourth creates a Ptemplate. Each change is timed from
 * its write's answer to when the bench's own watch saw its child as it asks
 * (bench/child_watch.ts): the Module's `max_dev`, or the new Ptemplate's Module and DaemonSet;
 * and, by the API server's clock alone (its audit log), from its answer to the change to its
 * answer to the children's writes that carried it (`reached`), which leaves out the bench's own
 * delay in hearing of them: its watch takes every write of the backlog too. Not a test: its
 * numbers are the machine's, and the ratios between the two queues in one run are what travel.
 */
import { parseArgs } from "node:util";
import { PTEMPLATE } from "../crds/ptemplate.ts";
import type { Unstructured } from "../kube/object.ts";
import { consumerDaemonSetName } from "../reconcilers/consumer_daemonset.ts";
import { installAllButDeployment, kustomize } from "../tests/fixtures/manifests.ts";
import { OperatorRun, permissionFlags, taskEnv } from "../tests/fixtures/operator_command.ts";
import { sleep } from "../util/sleep.ts";
import { ChildWatch } from "./child_watch.ts";
import { reachOf, splitOf, type Timed, writesNear, writesOf } from "./edit_split.ts";
import { drained, meansMs, queuesOf } from "./queue_metrics.ts";
import {
  populate,
  type ScaleCluster,
  selectorOf,
  startPlane,
  waitForChildren,
  waitForQuiet,
  wide,
  WIDTH,
} from "./scale_cluster.ts";
import { percentile } from "./scale_figures.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    count: { type: "string", default: "1000" },
    rate: { type: "string", default: "5" },
    concurrency: { type: "string" },
    backlogs: { type: "string", default: "takeover,restart,resync" },
    out: { type: "string" },
  },
});
const COUNT = Number(values.count);
const RATE = Number(values.rate);
if (!Number.isInteger(COUNT) || COUNT < 1) {
  throw new Error(`--count must be a whole number of Ptemplates, 1 or more, not ${values.count}`);
}
if (!(RATE > 0 && RATE <= 100)) {
  throw new Error(`--rate must be changes per second above 0 and at most 100, not ${values.rate}`);
}
/** The operator's workers per plugin (`run --concurrency`); its default when not given. */
const CONCURRENCY = values.concurrency;
if (CONCURRENCY !== undefined && !/^[1-9][0-9]*$/.test(CONCURRENCY)) {
  throw new Error(`--concurrency must be a whole number of workers per plugin, not ${CONCURRENCY}`);
}
const CLUSTER: ScaleCluster = { count: COUNT, nodes: 0, unrelatedPods: 0, gate: true };
const SA = "system:serviceaccount:ptemplate-operator-system:ptemplate-operator";
/** How long a change made during a backlog may take to reach its child before it counts missing. */
const MISSING_AFTER_MS = 120_000;
/** The backlogs, and the queues each is measured with, in the order they run. */
const ALL_SCENARIOS = ["takeover", "restart", "resync"] as const;
/**
 * The resync period of the `resync` scenario, in seconds: its first resync comes well after its
 * start's backlog (a restart's) has drained, which takes about a second per 1000 (the scenario
 * stops with an error if it has not). A small run waits 15 s for it, twice, not minutes.
 */
const RESYNC_S = Math.max(15, COUNT / 100);
const RESYNC_LINE = "resync: every object queued again";
const QUEUES = [["priority", true], ["fifo", false]] as const;

type Scenario = typeof ALL_SCENARIOS[number];
/** The backlogs `--backlogs` asks for, in the order they run. */
const SCENARIOS = ALL_SCENARIOS.filter((s) => values.backlogs.split(",").includes(s));
const unknown = values.backlogs.split(",").filter((s) =>
  !(ALL_SCENARIOS as readonly string[]).includes(s)
);
if (unknown.length || !SCENARIOS.length) {
  throw new Error(
    `--backlogs takes one or more of ${ALL_SCENARIOS.join(", ")}, comma-separated, not ` +
      values.backlogs,
  );
}

/** One change made during a backlog, and when its child showed it. */
interface Change extends Timed {
  kind: "edit" | "create";
  /** Ms after the backlog began that its write was answered. */
  writtenMs: number;
  /** Ms from the write's answer to its child, as the bench's watch saw it; undefined: never. */
  waitedMs?: number;
}

/** A change written at `written` (ms since epoch) and seen at `seen`, in a backlog from `began`. */
function changeOf(
  kind: Change["kind"],
  name: string,
  began: number,
  written: number,
  seen: number | undefined,
): Change {
  return {
    kind,
    name,
    writtenAt: written,
    seenAt: seen,
    writtenMs: written - began,
    waitedMs: seen === undefined ? undefined : Math.max(0, seen - written),
  };
}

/** The p50, p99 and largest of `ms`, and how many the audit log could not time. */
function reachWaits(ms: (number | undefined)[]) {
  const known = ms.filter((m) => m !== undefined);
  return {
    p50Ms: percentile(known, 50),
    p99Ms: percentile(known, 99),
    maxMs: known.length ? Math.max(...known) : NaN,
    untimed: ms.length - known.length,
  };
}

/** The p50, p99 and largest wait of `changes`, in ms (those that never arrived left out). */
function waits(changes: Change[]) {
  const ms = changes.flatMap((c) => c.waitedMs === undefined ? [] : [c.waitedMs]);
  return {
    p50Ms: percentile(ms, 50),
    p99Ms: percentile(ms, 99),
    maxMs: ms.length ? Math.max(...ms) : NaN,
  };
}

const say = (line: string) => console.error(`bench: ${line}`);
/** The machine's load over 1, 5 and 15 minutes: on a shared machine, what else ran. */
const loadAverage = () => Deno.loadavg();

const result: Record<string, unknown> = {
  command: `deno task bench:backlog --count ${COUNT} --rate ${RATE}` +
    (CONCURRENCY === undefined ? "" : ` --concurrency ${CONCURRENCY}`) +
    (SCENARIOS.length === ALL_SCENARIOS.length ? "" : ` --backlogs ${SCENARIOS.join(",")}`),
  date: new Date().toISOString(),
  deno: Deno.version.deno,
  v8Flags: permissionFlags("start").find((flag) => flag.startsWith("--v8-flags=")),
  env: taskEnv("start"),
  count: COUNT,
  changesPerSecond: RATE,
  cpus: navigator.hardwareConcurrency,
  loadAverageBefore: loadAverage(),
};
const plane = await startPlane(CLUSTER, say);
const figures = Object.fromEntries(SCENARIOS.map((s) => [s, {}])) as Record<
  Scenario,
  Record<string, unknown>
>;
let watch: ChildWatch | undefined;
try {
  const admin = plane.client();
  await installAllButDeployment(admin, await kustomize(plane.binaries.kubectl, "deploy"));
  const identity = await plane.serviceAccountIdentity(
    "ptemplate-operator-system",
    "ptemplate-operator",
  );
  const operatorArgs = [
    "run",
    `--kubeconfig=${identity.kubeconfigPath}`,
    "--metrics-bind-address=127.0.0.1:0",
    "--health-probe-bind-address=0",
    ...(CONCURRENCY === undefined ? [] : [`--concurrency=${CONCURRENCY}`]),
  ];
  /** A fresh operator process, resolved once its caches have synced. */
  const start = async (priority: boolean, ...args: string[]) => {
    const operator = OperatorRun.start([...operatorArgs, `--priority-queue=${priority}`, ...args]);
    while (!operator.lines.some((l) => l.msg === "caches synced")) {
      if (await Promise.race([operator.child.status.then(() => true), sleep(50)])) {
        throw new Error(`the operator exited: ${JSON.stringify(operator.lines.slice(-5))}`);
      }
    }
    return operator;
  };

  await populate(plane, CLUSTER, say);
  const names = Array.from({ length: COUNT }, (_, i) => `pt-${i}`);
  const children = new ChildWatch(admin, "scale");
  watch = children;
  await children.ready;
  {
    const operator = await start(true);
    await waitForChildren(admin, COUNT);
    await waitForQuiet(plane, SA);
    await operator.stop();
    say(`a first operator made every child`);
  }

  // Which Ptemplate each edit changes: every one once before any twice, in no particular order.
  const order = [...names].sort(() => Math.random() - 0.5);
  let nextEdit = 0;
  let phase = 0;
  for (const scenario of SCENARIOS) {
    for (const [queue, priority] of QUEUES) {
      phase++;
      if (scenario === "takeover") {
        // A value no Ptemplate had: every visit of the backlog has a Module to write.
        const bulk = 4 + phase;
        const bumpStarted = Date.now();
        await wide(
          names.length,
          WIDTH,
          (i) =>
            admin.patch(PTEMPLATE, names[i], { spec: { maxdev: bulk } }, { namespace: "scale" }),
        );
        say(`${names.length} specs changed in ${(Date.now() - bumpStarted) / 1000} s`);
      }
      const operator = scenario === "resync"
        ? await start(priority, `--resync-period=${RESYNC_S}`)
        : await start(priority);
      const port = await operator.port("metrics");
      const backlog = names.length;
      const metrics = async () => await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      /** The queues just before the backlog measured: a resync's comes after its start's. */
      let since: ReturnType<typeof queuesOf> | undefined;
      if (scenario === "resync") {
        while (!drained(queuesOf(await metrics()), { count: backlog, priority })) await sleep(100);
        since = queuesOf(await metrics());
        if (operator.lines.some((l) => l.msg === RESYNC_LINE)) {
          throw new Error(`a resync came before the start's backlog drained: raise RESYNC_S`);
        }
        while (!operator.lines.some((l) => l.msg === RESYNC_LINE)) await sleep(10);
      }
      const began = Date.now();
      let drainedAt: number | undefined;
      let pollFailed = false;
      const polling = (async () => {
        while (drainedAt === undefined) {
          if (drained(queuesOf(await metrics()), { count: backlog, priority, since })) {
            drainedAt = Date.now();
          } else await sleep(100);
        }
      })();
      polling.catch(() => pollFailed = true);
      // An edit's value no Ptemplate has had in an earlier phase.
      const edited = 200 + phase;
      const changes: Promise<Change>[] = [];
      let editsNow = 0;
      const timeout = (ms: number) => sleep(ms).then(() => undefined);
      for (let i = 0; drainedAt === undefined && !pollFailed; i++) {
        await sleep(Math.max(0, began + i * 1000 / RATE - Date.now()));
        if (drainedAt !== undefined || pollFailed) break;
        // Within one phase no Ptemplate is edited twice (its second edit would find its value
        // there already): once each has been, the changes are creations.
        if (i % 4 === 3 || editsNow >= order.length) {
          const name = `new-${phase}-${i}`;
          names.push(name);
          changes.push((async () => {
            await admin.create(PTEMPLATE, {
              metadata: { name, namespace: "scale" },
              spec: { selector: selectorOf(CLUSTER), maxdev: 4 },
            } as Unstructured);
            const written = Date.now();
            const seen = await Promise.race([
              children.bothExist(name, consumerDaemonSetName({ metadata: { name } })),
              timeout(MISSING_AFTER_MS),
            ]);
            return changeOf("create", name, began, written, seen);
          })());
        } else {
          editsNow++;
          const name = order[nextEdit++ % order.length];
          changes.push((async () => {
            await admin.patch(PTEMPLATE, name, { spec: { maxdev: edited } }, {
              namespace: "scale",
            });
            const written = Date.now();
            const seen = await Promise.race([
              children.moduleHas(name, edited),
              timeout(MISSING_AFTER_MS),
            ]);
            return changeOf("edit", name, began, written, seen);
          })());
        }
      }
      // A failure is surfaced below, by the awaits; until then none goes unhandled.
      for (const pending of changes) pending.catch(() => {});
      await polling;
      const made = await Promise.all(changes);
      const drainMs = drainedAt! - began;
      const text = await metrics();
      const audit = await plane.auditEvents();
      const split = splitOf(made, audit, { username: SA, namespace: "scale" });
      const writes = writesOf(audit, { username: SA, namespace: "scale" });
      const reach = reachOf(made, audit, {
        username: SA,
        namespace: "scale",
        children: (c) => [
          { resource: "modules", name: c.name },
          ...(c.kind === "create"
            ? [{ resource: "daemonsets", name: consumerDaemonSetName({ metadata: c }) }]
            : []),
        ],
      });
      const reached = (kind?: Change["kind"]) =>
        reachWaits(reach.filter((_, i) => kind === undefined || made[i].kind === kind));
      figures[scenario][queue] = {
        ...waits(made),
        edits: made.filter((c) => c.kind === "edit").length,
        creates: made.filter((c) => c.kind === "create").length,
        missing: made.filter((c) => c.waitedMs === undefined).length,
        // Changes whose child was there before the backlog had drained: served while it drained.
        doneBeforeDrain: made.filter((c) =>
          c.waitedMs !== undefined && c.writtenMs + c.waitedMs < drainMs
        ).length,
        backlogDrainMs: drainMs,
        backlog,
        // Where the time went: before the operator sent the child's write, and the write itself
        // (the audit log's), then by the operator's own account over the whole phase.
        split: {
          beforeWriteP50Ms: percentile(split.beforeWriteMs, 50),
          beforeWriteP99Ms: percentile(split.beforeWriteMs, 99),
          writeP50Ms: percentile(split.writeMs, 50),
          writeP99Ms: percentile(split.writeMs, 99),
        },
        queueWaitMeanMs: meansMs(text, "workqueue_queue_duration_seconds", ["name", "priority"]),
        workMeanMs: meansMs(text, "workqueue_work_duration_seconds", ["name"]),
        // Keys added per plugin and lane: beside the changes made, what else took the edit lane.
        queueAdds: Object.fromEntries(
          [...queuesOf(text)].flatMap(([name, q]) =>
            Object.entries(q.adds).map(([lane, n]) => [`${name} ${lane}`, n])
          ),
        ),
        rateLimiterMeanMs: meansMs(text, "rest_client_rate_limiter_duration_seconds", ["verb"]),
        byKind: {
          edit: waits(made.filter((c) => c.kind === "edit")),
          create: waits(made.filter((c) => c.kind === "create")),
        },
        // The same by the API server's clock alone: from its answer to the change to its answer
        // to the children's writes, without the bench's own delay in hearing of either.
        reached: { ...reached(), edit: reached("edit"), create: reached("create") },
        // The slowest hundredth (five at least): when in the backlog they came, and where their
        // time went, which the percentiles alone do not say.
        slowest: made
          .map((change, i) => ({ change, carried: split.each[i], reachedMs: reach[i] }))
          .filter(({ change }) => change.waitedMs !== undefined)
          .sort((a, b) => b.change.waitedMs! - a.change.waitedMs!)
          .slice(0, Math.max(5, Math.ceil(made.length / 100)))
          .map(({ change, carried, reachedMs }) => ({
            name: change.name,
            kind: change.kind,
            reachedMs,
            writtenMs: change.writtenMs,
            waitedMs: change.waitedMs,
            ...carried,
            moduleWrites: writesNear(change, writes),
          })),
      };
      say(`${scenario}, ${queue}: ${JSON.stringify(figures[scenario][queue])}`);
      await waitForQuiet(plane, SA);
      await operator.stop();
    }
  }
  if (children.failure) throw children.failure;
} catch (error) {
  // Said before the control plane stops, whose closing fails what is still in flight.
  say(`failed: ${error instanceof Error ? error.stack : error}`);
  throw error;
} finally {
  await watch?.stop();
  await plane.stop();
}

result.editDuringBacklog = figures;
result.loadAverageAfter = loadAverage();
result.ratios = Object.fromEntries(SCENARIOS.map((scenario) => {
  const { priority, fifo } = figures[scenario] as Record<string, ReturnType<typeof waits>>;
  return [scenario, { fifoOverPriorityP99: fifo.p99Ms / priority.p99Ms }];
}));

const rounded = (ms: unknown) => typeof ms === "number" ? ms.toFixed(0) : "-";
console.log(`\n${result.command}\n`);
console.log(
  "| backlog | queue | p50 ms | p99 ms | max ms | p99 written ms | edits + creates | missing | " +
    "done before drain | drain s |",
);
console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
for (const scenario of SCENARIOS) {
  for (const [queue] of QUEUES) {
    const f = figures[scenario][queue] as Record<string, number> & { reached: { p99Ms: number } };
    console.log(
      `| ${scenario} of ${f.backlog} | ${queue} | ${rounded(f.p50Ms)} | ${rounded(f.p99Ms)} | ` +
        `${rounded(f.maxMs)} | ${rounded(f.reached.p99Ms)} | ${f.edits} + ${f.creates} | ` +
        `${f.missing} | ${f.doneBeforeDrain} | ` +
        `${(f.backlogDrainMs / 1000).toFixed(1)} |`,
    );
  }
}
if (values.out) {
  await Deno.writeTextFile(values.out, JSON.stringify(result, null, 2) + "\n");
  say(`wrote ${values.out}`);
}
