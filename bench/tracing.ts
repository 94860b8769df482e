/**
 * `deno task bench:tracing`: what tracing costs a visit, as ratios in one run. A controller visits
 * objects held in memory (no API server: the visit is the runtime's own work alone, the cheapest
 * a visit gets) with OpenTelemetry off, then in a process of its own with it on (`OTEL_DENO=true`,
 * exporting over OTLP to a sink in this process); and the span and record of a visit alone, with
 * OpenTelemetry off, against the visit. Flags: --visits N (default 20000), --out FILE.
 */
import { parseArgs } from "node:util";
import { CONFIG_MAP } from "../kube/kinds.ts";
import type { KubeClient } from "../kube/client.ts";
import type { KubeObject } from "../kube/object.ts";
import { PTEMPLATE_OPERATOR } from "../runtime/identity/mod.ts";
import { log, Registry } from "../runtime/observe/mod.ts";
import { definePlugin } from "../runtime/plugin/mod.ts";
import {
  ChildProblems,
  Controller,
  ControllerMetrics,
  VisitTrace,
  WriteLoopGuard,
} from "../runtime/reconcile/mod.ts";
import { operatorTracer, withSpan } from "../util/tracer.ts";
import { FakePool } from "../runtime/reconcile/testdata/fake_pool.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: { visits: { type: "string" }, out: { type: "string" }, child: { type: "boolean" } },
});
const VISITS = Number(values.visits ?? 20_000);

/** Microseconds per visit of a controller over `VISITS` objects, each visited once. */
async function visitMicros(): Promise<number> {
  const pool = new FakePool();
  const client = { fenced: () => client, observed: () => client } as unknown as KubeClient;
  let visited = 0;
  let all!: () => void;
  const done = new Promise<void>((resolve) => all = resolve);
  const controller = new Controller(
    definePlugin({
      name: "bench",
      for: CONFIG_MAP,
      writesStatus: false,
      reconcile: () => {
        if (++visited === VISITS) all();
      },
    }),
    {
      operator: PTEMPLATE_OPERATOR,
      client,
      pool,
      metrics: new ControllerMetrics(new Registry()),
      events: { record: () => {} },
      log: log("bench"),
      problems: new ChildProblems(),
      guard: new WriteLoopGuard(),
      concurrency: 8,
    },
  );
  for (let i = 0; i < VISITS; i++) {
    pool.put(CONFIG_MAP, { metadata: { name: `o-${i}`, namespace: "bench" } } as KubeObject);
  }
  const stop = new AbortController();
  const started = performance.now();
  const running = controller.run(stop.signal, new AbortController().signal);
  await done;
  const micros = (performance.now() - started) * 1000 / VISITS;
  stop.abort();
  await running;
  return micros;
}

/** Nanoseconds of a visit's span alone, as VisitTrace makes it (started, a cause, run in, ended). */
function spanNanos(): number {
  const rounds = 200_000;
  const started = performance.now();
  for (let i = 0; i < rounds; i++) {
    const span = operatorTracer().startSpan("reconcile bench", {
      attributes: { "reconcile.object": "ConfigMap/bench/o", "reconcile.queue.wait_ms": 1 },
    });
    span.addEvent("cause: start", { "cause.kind": "start" }, Date.now());
    withSpan(span, () => undefined);
    span.setAttributes({ "reconcile.outcome": "reconciled" });
    span.end();
  }
  return (performance.now() - started) * 1e6 / rounds;
}

/** Nanoseconds of a visit's span and its record for explain (made, filled, ended). */
function traceNanos(): number {
  const taken = {
    key: "ConfigMap/bench/o",
    priority: "bulk" as const,
    causes: { list: [{ kind: "start" as const, at: Date.now() }], more: 0 },
    waitedMs: 1,
  };
  const rounds = 200_000;
  const started = performance.now();
  for (let i = 0; i < rounds; i++) {
    const trace = new VisitTrace("bench", taken);
    trace.run(() => undefined);
    trace.end({ outcome: "reconciled", result: "success", tookMs: 1 });
  }
  return (performance.now() - started) * 1e6 / rounds;
}

if (values.child) {
  // The measured process: one number on stdout.
  await visitMicros(); // warm-up
  console.log(JSON.stringify({ visitMicros: await visitMicros() }));
  Deno.exit(0);
}

/** Runs this file as the measured process, with `env`. */
async function child(env: Record<string, string>): Promise<number> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read",
      "--allow-env",
      "--allow-net=127.0.0.1",
      new URL(import.meta.url).pathname,
      "--child",
      "--visits",
      String(VISITS),
    ],
    env,
    stdout: "piped",
    stderr: "inherit",
  }).output();
  if (!out.success) throw new Error(`the measured process failed (${out.code})`);
  return JSON.parse(new TextDecoder().decode(out.stdout)).visitMicros;
}

// An OTLP sink for the traced run: it takes everything and counts the bytes.
let received = 0;
const sink = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (req) => {
  received += (await req.arrayBuffer()).byteLength;
  return Response.json({});
});
const endpoint = `http://127.0.0.1:${sink.addr.port}`;
const off = await child({});
const on = await child({
  OTEL_DENO: "true",
  OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
  OTEL_DENO_CONSOLE: "ignore",
});
await sink.shutdown();
const spanOff = spanNanos();
const traceOff = traceNanos();
const offVisit = await visitMicros();

const result = {
  command: `deno task bench:tracing --visits ${VISITS}`,
  date: new Date().toISOString(),
  deno: Deno.version.deno,
  visits: VISITS,
  visitMicros: { off, on },
  onOverOff: on / off,
  spanNanosOff: spanOff,
  spanShareOfVisitOff: spanOff / 1000 / offVisit,
  spanAndRecordNanosOff: traceOff,
  spanAndRecordShareOfVisitOff: traceOff / 1000 / offVisit,
  exportedBytes: received,
};
console.log(`
| ${VISITS} visits, objects in memory | per visit |
| --- | --- |
| OpenTelemetry off | ${off.toFixed(1)} µs |
| OpenTelemetry on, exported over OTLP | ${on.toFixed(1)} µs (${(on / off).toFixed(2)}×) |
| a visit's span alone, off | ${spanOff.toFixed(0)} ns (${
  (100 * result.spanShareOfVisitOff).toFixed(1)
}% of a visit here) |
| its span and its record for explain, off | ${traceOff.toFixed(0)} ns (${
  (100 * result.spanAndRecordShareOfVisitOff).toFixed(1)
}%) |
`);
if (values.out) await Deno.writeTextFile(values.out, JSON.stringify(result, null, 2) + "\n");
