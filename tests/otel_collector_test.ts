/**
 * The test collector receives what a Deno program exports with `OTEL_DENO=true`, and `spans()`
 * and `logs()` give it back: a parent span with an event and attributes, its child, and the
 * `console.log` written inside the child, over each protocol Deno speaks.
 */
import { expect } from "expect";
import { BinariesUnavailable, findBinaries } from "../testing/binaries.ts";
import { inCi } from "../testing/ci.ts";
import { eventually } from "../testing/eventually.ts";
import type { Step } from "../testing/integration_test_case.ts";
import { OtelCollector } from "../testing/otel_collector.ts";
import { liveGroupMembers } from "../testing/process.ts";
import type { FlatLog, FlatSpan } from "../testing/otlp_json.ts";

// Like integrationTest: build the collector once (minutes on a cold machine), and skip only
// outside CI when it cannot be had.
const found = await findBinaries({ names: ["otelcol"] }).then(
  (binaries) => ({ binaries }),
  (error: Error) => ({ error }),
);
const skip = "error" in found && found.error instanceof BinariesUnavailable && !inCi();
if (skip) console.error(`\n!!! SKIPPING otel collector tests (not under CI): ${found.error}\n`);

/**
 * The traced program: `run.id` marks its spans; "no-child" leaves the child span out; "linger"
 * keeps running after the trace, as the operator does, until it is killed.
 */
const PROGRAM = `
import { SpanStatusCode, trace } from "npm:@opentelemetry/api@1.9.0";
const [runId, variant] = Deno.args;
const tracer = trace.getTracer("otel-collector-test", "1.0.0");
tracer.startActiveSpan("parent", {
  attributes: { "run.id": runId, "test.string": "v", "test.number": 3, "test.bool": true },
}, (parent) => {
  parent.addEvent("checkpoint", { "event.attr": "x", "event.n": 7 });
  if (variant !== "no-child") {
    tracer.startActiveSpan("child", { attributes: { "run.id": runId } }, (child) => {
      console.log("inside child " + runId);
      child.end();
    });
  }
  parent.setStatus({ code: SpanStatusCode.ERROR, message: "boom" });
  parent.end();
});
if (variant === "linger") setInterval(() => {}, 60_000);
`;

/** Runs the program to its end (Deno sends what it holds at exit) and returns its run id. */
async function runProgram(env: Record<string, string>, variant = "full"): Promise<string> {
  const program = await startProgram(env, variant);
  const { code, stderr } = await program.child.output();
  await Deno.remove(program.dir, { recursive: true });
  if (code !== 0) {
    throw new Error(`the traced program failed:\n${new TextDecoder().decode(stderr)}`);
  }
  return program.runId;
}

async function startProgram(
  env: Record<string, string>,
  variant: string,
): Promise<{ runId: string; child: Deno.ChildProcess; dir: string }> {
  const dir = await Deno.makeTempDir({ prefix: "ptemplate-otel-program-" });
  await Deno.writeTextFile(`${dir}/program.ts`, PROGRAM);
  const runId = crypto.randomUUID();
  // No config: the program pins its one import and must not touch the repository's lock file.
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-config", "--no-lock", `${dir}/program.ts`, runId, variant],
    env: { ...env, OTEL_SERVICE_NAME: "otel-collector-test", NO_COLOR: "1" },
    stdout: "null",
    stderr: "piped",
  }).spawn();
  return { runId, child, dir };
}

/** Throws unless the collector holds run `runId`'s whole trace, as the program made it. */
function expectTrace(spans: FlatSpan[], logs: FlatLog[], runId: string): void {
  const mine = spans.filter((s) => s.attributes["run.id"] === runId);
  const parent = mine.find((s) => s.name === "parent");
  const child = mine.find((s) => s.name === "child");
  if (!parent || !child) {
    throw new Error(`run ${runId}: spans ${JSON.stringify(mine.map((s) => s.name))} arrived`);
  }
  expect(mine).toHaveLength(2);
  expect(parent).toMatchObject({
    parentSpanId: undefined,
    kind: "internal",
    attributes: { "run.id": runId, "test.string": "v", "test.number": 3, "test.bool": true },
    events: [{ name: "checkpoint", attributes: { "event.attr": "x", "event.n": 7 } }],
    status: { code: "error", message: "boom" },
    resource: { "service.name": "otel-collector-test" },
    scope: { name: "otel-collector-test", version: "1.0.0" },
  });
  expect(parent.spanId).toMatch(/^[0-9a-f]{16}$/);
  expect(parent.traceId).toMatch(/^[0-9a-f]{32}$/);
  expect(child).toMatchObject({ traceId: parent.traceId, parentSpanId: parent.spanId });
  expect(parent.startTimeUnixNano <= child.startTimeUnixNano).toBe(true);
  expect(child.endTimeUnixNano <= parent.endTimeUnixNano).toBe(true);
  const event = parent.events[0].timeUnixNano;
  expect(parent.startTimeUnixNano <= event && event <= parent.endTimeUnixNano).toBe(true);
  // The console line is a log record, tied to the span it was written in.
  expect(logs.filter((l) => l.body === `inside child ${runId}\n`)).toEqual([
    expect.objectContaining({
      traceId: child.traceId,
      spanId: child.spanId,
      attributes: { "log.iostream": "stdout" },
    }),
  ]);
}

async function received(collector: OtelCollector, runId: string): Promise<void> {
  expectTrace(await collector.spans(), await collector.logs(), runId);
}

/** A test with a started collector, whose files are kept (and their folder printed) if it fails. */
function collectorTest(
  name: string,
  fn: (collector: OtelCollector, step: Step) => Promise<void>,
): void {
  Deno.test({
    name,
    ignore: skip,
    async fn(t) {
      if ("error" in found) throw found.error;
      const collector = await OtelCollector.start({ binaries: found.binaries });
      let failed = true;
      // A failed step does not throw: remember it, or its evidence would be removed.
      let stepFailed = false;
      const step: Step = async (stepName, stepFn) => {
        const ok = await t.step(stepName, stepFn);
        if (!ok) stepFailed = true;
        return ok;
      };
      try {
        await fn(collector, step);
        failed = stepFailed;
      } finally {
        await collector.stop({ keepFiles: failed });
      }
    },
  });
}

collectorTest(
  "a Deno program's spans, event, attributes and logs arrive, over each protocol",
  async (collector, step) => {
    const protocols = {
      "http/protobuf": collector.endpoint,
      "http/json": collector.endpoint,
      grpc: collector.grpcEndpoint,
    };
    for (const [protocol, endpoint] of Object.entries(protocols)) {
      await step(protocol, async () => {
        const runId = await runProgram({
          OTEL_DENO: "true",
          OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
          OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
        });
        await eventually(() => received(collector, runId));
      });
    }
    await step("with denoEnv()", async () => {
      const runId = await runProgram(collector.denoEnv());
      await eventually(() => received(collector, runId));
    });
    await step("from a process that keeps running, with denoEnv()", async () => {
      const program = await startProgram(collector.denoEnv(), "linger");
      try {
        await eventually(() => received(collector, program.runId));
        expect(await Promise.race([program.child.status, "running"])).toBe("running");
      } finally {
        program.child.kill("SIGKILL");
        await program.child.output();
        await Deno.remove(program.dir, { recursive: true });
      }
    });
  },
);

collectorTest(
  "a program that exports nothing, or half a trace, fails the check",
  async (collector) => {
    const silent = await runProgram({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint }); // no OTEL_DENO
    const sampledOut = await runProgram({
      ...collector.denoEnv(),
      OTEL_TRACES_SAMPLER: "always_off",
    });
    const halfTrace = await runProgram(collector.denoEnv(), "no-child");
    // Each program had sent all it would before it exited, and the collector writes in the order
    // it receives: once a later run shows up, nothing more of the earlier ones can come.
    const later = await runProgram(collector.denoEnv());
    await eventually(() => received(collector, later));
    const [spans, logs] = [await collector.spans(), await collector.logs()];
    expect(() => expectTrace(spans, logs, silent)).toThrow(/spans \[\] arrived/);
    expect(() => expectTrace(spans, logs, sampledOut)).toThrow(/spans \[\] arrived/);
    expect(() => expectTrace(spans, logs, halfTrace)).toThrow(/spans \["parent"\] arrived/);
    // The sampler drops spans only: the console line still arrives.
    expect(logs.filter((l) => l.body === `inside child ${sampledOut}\n`)).toHaveLength(1);
  },
);

Deno.test({
  name: "stop() leaves no collector process and no files behind",
  ignore: skip,
  async fn() {
    if ("error" in found) throw found.error;
    const collector = await OtelCollector.start({ binaries: found.binaries });
    const pid = collector.pid;
    expect(await liveGroupMembers(pid)).not.toEqual([]);
    await collector.stop();
    await collector.stop();
    expect(await liveGroupMembers(pid)).toEqual([]);
    await expect(Deno.stat(collector.dir)).rejects.toThrow(Deno.errors.NotFound);
    await expect(collector.spans()).rejects.toThrow(Deno.errors.NotFound);
  },
});
