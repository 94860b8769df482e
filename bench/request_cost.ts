/**
 * `deno task bench:request-cost`: what one request to the API server and one watch event cost the
 * operator's runtime against Go, in the same run on the same control plane. Each side is a process
 * of its own: Deno with the start task's flags (`request_cost_deno.ts`: Deno's `fetch`, and our
 * client over it), Go with the standard library only (`request_cost_go/`: net/http's HTTP/2 and
 * encoding/json, which client-go's transport and decoders are built on, so the least a Go operator
 * spends). Both GET the same DaemonSet, the controller's status in it, `--requests` times from
 * `--concurrency` callers over one HTTP/2 connection and parse the answer, then parse its watch
 * event `--events` times; each reads its process's CPU (user and system, every thread) around
 * each row. `--rounds` alternate the two; the table gives medians and the ratios to Go.
 *
 *   deno task bench:request-cost [--requests 3000] [--events 20000] [--concurrency 16] [--rounds 5] [--out file.json]
 */
import { parseArgs } from "node:util";
import { DAEMON_SET } from "../kube/kinds.ts";
import { ControlPlane } from "../testing/control_plane.ts";
import { haveGo } from "../testing/binaries.ts";
import { eventually } from "../testing/eventually.ts";
import { permissionFlags, runtimeOptions, taskEnv } from "../tests/fixtures/operator_command.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    requests: { type: "string", default: "3000" },
    events: { type: "string", default: "20000" },
    concurrency: { type: "string", default: "16" },
    rounds: { type: "string", default: "5" },
    out: { type: "string" },
  },
});
const [REQUESTS, EVENTS, CONCURRENCY, ROUNDS] = [
  values.requests,
  values.events,
  values.concurrency,
  values.rounds,
].map(Number);
const say = (line: string) => console.error(`bench: ${line}`);

/** CPU microseconds per item, as one side printed them. */
interface DenoSide {
  fetch: number;
  client: number;
  parse: number;
}
interface GoSide {
  get: number;
  parse: number;
}

/** Runs `command` and returns the JSON object it printed, or throws with what it said. */
async function run<T>(command: string, args: string[], env?: Record<string, string>): Promise<T> {
  const out = await new Deno.Command(command, { args, env, stdout: "piped", stderr: "piped" })
    .output();
  const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  if (!out.success) throw new Error(`${command} ${args.join(" ")} failed:\n${text(out.stderr)}`);
  return JSON.parse(text(out.stdout));
}

const median = (values: number[]) => values.toSorted((a, b) => a - b)[values.length >> 1];

if (!await haveGo()) throw new Error("bench:request-cost builds its Go side: install Go 1.26");
const plane = await ControlPlane.start({
  controllerManager: { controllers: ["daemonset-controller"] },
  progress: say,
});
const deno: DenoSide[] = [];
const go: GoSide[] = [];
let eventBytes = 0;
let goVersion = "";
let work: string | undefined;
try {
  work = await Deno.makeTempDir({ prefix: "ptemplate-request-cost-" });
  const goBinary = `${work}/request_cost`;
  const goEnv = { GOTOOLCHAIN: "local", CGO_ENABLED: "0" };
  const built = await new Deno.Command("go", {
    args: ["build", "-o", goBinary, "."],
    cwd: new URL("./request_cost_go/", import.meta.url).pathname,
    env: goEnv,
  }).output();
  if (!built.success) throw new Error(`go build: ${new TextDecoder().decode(built.stderr)}`);
  goVersion = new TextDecoder().decode(
    (await new Deno.Command("go", { args: ["env", "GOVERSION"] }).output()).stdout,
  ).trim();

  // A DaemonSet as the operator makes one, once the DaemonSet controller has written its status.
  const client = plane.client();
  const name = "request-cost";
  await client.create(DAEMON_SET, {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name, namespace: "default", labels: { app: name } },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          nodeSelector: { "example.com/device": "present" },
          containers: [{
            name: "consumer",
            image: "registry.example.com/consumer:1.0",
            resources: { limits: { "example.com/device": "1" } },
          }],
        },
      },
    },
  }, { namespace: "default" });
  const object = await eventually(async () => {
    const written = await client.get(DAEMON_SET, name, { namespace: "default" });
    if (written.status?.observedGeneration === undefined) {
      throw new Error("the DaemonSet controller wrote no status: is kube-controller-manager up?");
    }
    return written;
  });
  const event = JSON.stringify({ type: "MODIFIED", object });
  eventBytes = new TextEncoder().encode(event).length;
  const eventFile = `${work}/event.json`;
  await Deno.writeTextFile(eventFile, event);

  const args = [
    plane.adminKubeconfigPath,
    `/apis/apps/v1/namespaces/default/daemonsets/${name}`,
    eventFile,
    String(REQUESTS),
    String(EVENTS),
    String(CONCURRENCY),
  ];
  const denoScript = new URL("./request_cost_deno.ts", import.meta.url).pathname;
  for (let round = 1; round <= ROUNDS; round++) {
    deno.push(
      await run<DenoSide>(
        Deno.execPath(),
        ["run", ...runtimeOptions("start"), ...permissionFlags("start"), denoScript, ...args],
        taskEnv("start"),
      ),
    );
    go.push(await run<GoSide>(goBinary, args, goEnv));
    say(`round ${round} of ${ROUNDS}`);
  }
} finally {
  await plane.stop();
  if (work) await Deno.remove(work, { recursive: true });
}

const of = <T>(runs: T[], key: keyof T) => median(runs.map((run) => run[key] as number));
const goGet = of(go, "get");
const goParse = of(go, "parse");
const rows = [
  { row: "GET over HTTP/2, answer parsed", side: "Deno's fetch", us: of(deno, "fetch"), go: goGet },
  { row: "GET over HTTP/2, answer parsed", side: "our client", us: of(deno, "client"), go: goGet },
  { row: "GET over HTTP/2, answer parsed", side: "Go's net/http", us: goGet, go: goGet },
  {
    row: `a watch event parsed (${eventBytes} bytes)`,
    side: "V8's JSON.parse",
    us: of(deno, "parse"),
    go: goParse,
  },
  {
    row: `a watch event parsed (${eventBytes} bytes)`,
    side: "Go's encoding/json",
    us: goParse,
    go: goParse,
  },
];
const command = `deno task bench:request-cost --requests ${REQUESTS} --events ${EVENTS} ` +
  `--concurrency ${CONCURRENCY} --rounds ${ROUNDS}`;
console.log(`\n${command}\n`);
console.log("| what | who | CPU µs each | against Go |");
console.log("| --- | --- | --- | --- |");
for (const r of rows) {
  console.log(`| ${r.row} | ${r.side} | ${r.us.toFixed(1)} | ${(r.us / r.go).toFixed(2)}× |`);
}
if (values.out) {
  await Deno.writeTextFile(
    values.out,
    JSON.stringify(
      {
        command,
        date: new Date().toISOString(),
        deno: Deno.version.deno,
        go: goVersion,
        eventBytes,
        rows: rows.map(({ row, side, us, go }) => ({
          row,
          side,
          cpuMicros: us,
          againstGo: us / go,
        })),
        runs: { deno, go },
      },
      null,
      2,
    ) + "\n",
  );
  say(`wrote ${values.out}`);
}
