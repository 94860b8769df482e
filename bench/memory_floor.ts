/**
 * `deno task bench:memory-floor`: where the memory of the operator's empty process goes. Against
 * an empty cluster (the CRDs installed, the operator's RBAC, its ServiceAccount's token), each row
 * a process of its own with the start task's flags and environment, its resident set read 5 s
 * after it is ready (the operator: its caches synced), split into anonymous memory (V8's heap,
 * malloc) and file pages (mostly the deno executable's code), the median of `--repeat` runs:
 *
 * - an empty program: what `deno run` costs with nothing to do; the same importing one npm package
 *   (Node compatibility and the npm resolution wake up), and importing the operator's modules;
 * - the operator's I/O alone (`memory_floor_io.ts`): a TLS client listing and watching the kinds
 *   the operator caches, and an HTTP server, without the operator; and the same having imported
 *   the libraries the operator starts with (LogTape from npm, the Node built-ins it imports);
 * - the operator, as bench:scale measures it (its kubeconfig in YAML's JSON form), and with a
 *   kubeconfig in YAML, which loads the YAML parser;
 * - the operator with V8 and Deno options that trade memory against CPU, for the record;
 * - the operator's modules as one minified bundle (`deno bundle --minify`, split where they are
 *   imported lazily): what fewer and smaller module sources would save.
 *
 * `--idle SECONDS` also reads, for the operator as bench:scale runs it, the CPU it uses over that
 * long after its resident set, idle against the empty cluster (what waking up costs with nothing
 * to do), and its resident set again at the end: at rest. Once V8's memory reducer has run (30 s
 * into an isolate by default, V8's `--gc-memory-reducer-start-delay-ms`), the heap grown while
 * the modules were compiled is given back; give `--idle` more than that to see it.
 *
 *   deno task bench:memory-floor [--repeat 3] [--idle 60] [--out bench/results/memory-floor.json]
 */
import { parseArgs } from "node:util";
import { stringify } from "yaml";
import { KMM_MODULE_CRD_FILE } from "../crds/kmm_module.ts";
import { ControlPlane } from "../testing/control_plane.ts";
import { installAllButDeployment, kustomize } from "../tests/fixtures/manifests.ts";
import { permissionFlags, runtimeOptions, taskEnv } from "../tests/fixtures/operator_command.ts";
import { sleep } from "../util/sleep.ts";
import { cpuOf } from "./process_stats.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    repeat: { type: "string", default: "3" },
    idle: { type: "string", default: "0" },
    out: { type: "string" },
  },
});
const REPEAT = Number(values.repeat);
const IDLE_SECONDS = Number(values.idle);
const say = (line: string) => console.error(`bench: ${line}`);

/**
 * The Node built-ins the operator's start imports: process metrics (`process.cpuUsage`, Deno's
 * only CPU clock without reading /proc, which Deno allows only with every permission), the
 * children's content hash (a synchronous SHA-256), and what the transport, the webhooks and the
 * plugin isolation use. Waking Node compatibility is a cost of its own, as an npm package's is.
 */
const OPERATOR_NODE_MODULES = [
  "node:process",
  "node:crypto",
  "node:util",
  "node:timers",
  "node:v8",
  "node:worker_threads",
];

/** One row: what runs, and how it says it is ready. */
interface Row {
  name: string;
  args: string[];
  ready: (line: string) => boolean;
  /** Deno options instead of the start task's (`--no-code-cache`). */
  options?: string[];
  /** Added to the start task's V8 flags. */
  v8?: string;
  /** Its idle CPU is read too, with `--idle` (the operator as bench:scale runs it). */
  idle?: boolean;
}

/** A resident set, split. */
interface Resident {
  rssMiB: number;
  anonMiB: number;
  fileMiB: number;
}

interface Sample extends Resident {
  /** CPU seconds a minute over the `--idle` seconds after the resident set was read. */
  idleCpuSecondsPerMinute?: number;
  /** The resident set at the end of those seconds. */
  atRest?: Resident;
}

/** `pid`'s resident set. Read by `cat`: Deno asks for every permission before it reads `/proc`. */
async function residentOf(pid: number): Promise<Resident> {
  const cat = await new Deno.Command("cat", { args: [`/proc/${pid}/status`] }).output();
  const status = new TextDecoder().decode(cat.stdout);
  const mib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)![1]) / 1024;
  return { rssMiB: mib("VmRSS"), anonMiB: mib("RssAnon"), fileMiB: mib("RssFile") };
}

/** Runs `row` once: its resident set 5 s after it is ready. */
async function sample(row: Row): Promise<Sample> {
  const flags = permissionFlags("start").map((flag) =>
    row.v8 && flag.startsWith("--v8-flags=") ? `${flag},${row.v8}` : flag
  );
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...row.options ?? runtimeOptions("start"), ...flags, ...row.args],
    env: taskEnv("start"),
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let ready = false;
  const watch = async (stream: ReadableStream<Uint8Array>) => {
    let buffered = "";
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      buffered += chunk;
      const lines = buffered.split("\n");
      buffered = lines.pop()!;
      if (lines.some(row.ready)) ready = true;
    }
  };
  const following = Promise.all([watch(child.stdout), watch(child.stderr)]);
  try {
    for (let i = 0; !ready; i++) {
      if (i > 600) throw new Error(`${row.name}: not ready after 60 s`);
      await sleep(100);
    }
    await sleep(5_000);
    const memory = await residentOf(child.pid);
    if (!row.idle || IDLE_SECONDS <= 0) return memory;
    const before = await cpuOf([child.pid]);
    await sleep(IDLE_SECONDS * 1_000);
    const used = await cpuOf([child.pid]) - before;
    return {
      ...memory,
      idleCpuSecondsPerMinute: used * 60 / IDLE_SECONDS,
      atRest: await residentOf(child.pid),
    };
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await following;
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1];
const medianOf = (samples: Resident[]): Resident => ({
  rssMiB: median(samples.map((r) => r.rssMiB)),
  anonMiB: median(samples.map((r) => r.anonMiB)),
  fileMiB: median(samples.map((r) => r.fileMiB)),
});

/**
 * Writes main.ts and what it imports, minified, as `deno bundle` splits it, into `dir`, and has
 * Deno analyse it once: the first run of a new file parses it for its imports and caches what it
 * found, at a cost in memory that would be counted against the bundle, not the operator.
 */
async function bundleOperator(dir: string): Promise<string> {
  const main = new URL("../main.ts", import.meta.url).pathname;
  const bundle = `${dir}/main.js`;
  await deno([
    "bundle",
    "--code-splitting",
    "--minify",
    "--platform=deno",
    `--outdir=${dir}`,
    main,
  ]);
  await deno(["cache", bundle]);
  return bundle;
}

async function deno(args: string[]): Promise<void> {
  const out = await new Deno.Command(Deno.execPath(), { args, stdout: "piped", stderr: "piped" })
    .output();
  if (!out.success) {
    throw new Error(`deno ${args.join(" ")} failed:\n${new TextDecoder().decode(out.stderr)}`);
  }
}

const plane = await ControlPlane.start({
  crds: [new URL("../crds/ptemplates.pt.example.com.yaml", import.meta.url), KMM_MODULE_CRD_FILE],
  progress: say,
});
const rows: (Row & Sample & { runs: Sample[] })[] = [];
let bundleDir: string | undefined;
try {
  bundleDir = await Deno.makeTempDir({ prefix: "ptemplate-operator-bundle-" });
  const bundle = await bundleOperator(bundleDir);
  await installAllButDeployment(plane.client(), await kustomize(plane.binaries.kubectl, "deploy"));
  const identity = await plane.serviceAccountIdentity(
    "ptemplate-operator-system",
    "ptemplate-operator",
  );
  const json = identity.kubeconfigPath;
  const yaml = `${json}.yaml`;
  await Deno.writeTextFile(yaml, stringify(JSON.parse(await Deno.readTextFile(json))), {
    mode: 0o600,
  });
  const here = (file: string) => new URL(file, import.meta.url).pathname;
  const operator = (kubeconfig: string) => [
    here("../main.ts"),
    "run",
    `--kubeconfig=${kubeconfig}`,
    "--metrics-bind-address=127.0.0.1:0",
    "--health-probe-bind-address=0",
    "--log-format=json",
  ];
  const synced = (line: string) => line.includes('"caches synced"');
  const table: Row[] = [
    { name: "an empty program", args: [here("memory_floor_idle.ts")], ready: (l) => l === "ready" },
    {
      name: "an empty program that imports one npm package (LogTape)",
      args: [here("memory_floor_idle.ts"), "@logtape/logtape"],
      ready: (l) => l === "ready",
    },
    {
      name: "the operator's modules loaded, nothing run",
      args: [here("memory_floor_idle.ts"), new URL("../cli/operator.ts", import.meta.url).href],
      ready: (l) => l === "ready",
    },
    {
      name: "the operator's I/O alone",
      args: [here("memory_floor_io.ts"), json],
      ready: (l) => l === "ready",
    },
    {
      name: "the same I/O, with LogTape and the node: modules the operator imports",
      args: [here("memory_floor_io.ts"), json, "@logtape/logtape", ...OPERATOR_NODE_MODULES],
      ready: (l) => l === "ready",
    },
    {
      name: "the operator (as bench:scale runs it)",
      args: operator(json),
      ready: synced,
      idle: true,
    },
    { name: "the operator, a YAML kubeconfig", args: operator(yaml), ready: synced },
    { name: "the operator with V8's code cache", args: operator(json), ready: synced, options: [] },
    {
      name: "the operator, young generation of 1 MiB",
      args: operator(json),
      ready: synced,
      v8: "--max-semi-space-size=1",
    },
    { name: "the operator, --lite-mode", args: operator(json), ready: synced, v8: "--lite-mode" },
    {
      name: "the operator, one minified bundle",
      args: [bundle, ...operator(json).slice(1)],
      ready: synced,
    },
  ];
  for (const row of table) {
    const runs: Sample[] = [];
    for (let i = 0; i < REPEAT; i++) runs.push(await sample(row));
    const result = {
      ...row,
      ...medianOf(runs),
      ...runs[0].idleCpuSecondsPerMinute === undefined ? {} : {
        idleCpuSecondsPerMinute: median(runs.map((r) => r.idleCpuSecondsPerMinute!)),
        atRest: medianOf(runs.map((r) => r.atRest!)),
      },
      runs,
    };
    rows.push(result);
    say(`${row.name}: ${result.rssMiB.toFixed(1)} MiB`);
  }
} finally {
  await plane.stop();
  if (bundleDir) await Deno.remove(bundleDir, { recursive: true });
}

const command = `deno task bench:memory-floor --repeat ${REPEAT}` +
  (IDLE_SECONDS > 0 ? ` --idle ${IDLE_SECONDS}` : "");
console.log(`\n${command}\n`);
console.log("| process, against an empty cluster | RSS MiB | anonymous | file pages |");
console.log("| --- | --- | --- | --- |");
for (const r of rows) {
  console.log(
    `| ${r.name} | ${r.rssMiB.toFixed(1)} | ${r.anonMiB.toFixed(1)} | ${r.fileMiB.toFixed(1)} |`,
  );
}
for (const r of rows.filter((r) => r.atRest)) {
  const rest = r.atRest!;
  console.log(
    `\n${r.name}, idle for ${IDLE_SECONDS} s: ${
      r.idleCpuSecondsPerMinute!.toFixed(3)
    } CPU-s a minute; then ${rest.rssMiB.toFixed(1)} MiB (anonymous ${
      rest.anonMiB.toFixed(1)
    }, file pages ${rest.fileMiB.toFixed(1)})`,
  );
}
if (values.out) {
  await Deno.writeTextFile(
    values.out,
    JSON.stringify(
      {
        command,
        date: new Date().toISOString(),
        deno: Deno.version.deno,
        flags: [...runtimeOptions("start"), ...permissionFlags("start")],
        env: taskEnv("start"),
        rows: rows.map(({ ready: _, args: __, ...row }) => row),
      },
      null,
      2,
    ) + "\n",
  );
  say(`wrote ${values.out}`);
}
