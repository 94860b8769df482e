import { expect } from "expect";

/** Runs `code` (which may import the tracer as ./util/tracer.ts) in a process with `env` alone. */
async function inProcess(code: string, env: Record<string, string>): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", code],
    cwd: new URL("..", import.meta.url).pathname,
    env: { NO_COLOR: "1", ...env },
    clearEnv: true,
  }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
  return text;
}

const PROBE = `
import { endSpan, operatorTracer, tracingApiLoaded, withSpan } from "./util/tracer.ts";
const span = operatorTracer().startSpan("probe");
const value = withSpan(span, () => 7);
endSpan(span, new Error("failed, and said so"));
const loaded = tracingApiLoaded();
console.log(JSON.stringify({ value, recording: span.isRecording(), loaded }));
`;

Deno.test("with tracing off, spans record nothing and the OpenTelemetry API is not loaded", async () => {
  expect(JSON.parse(await inProcess(PROBE, {}))).toEqual({
    value: 7,
    recording: false,
    loaded: false,
  });
});

Deno.test("with an OTLP endpoint (the compiled binary's switch) the API is loaded", async () => {
  const probe = JSON.parse(
    await inProcess(PROBE, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9" }),
  );
  expect(probe).toEqual({ value: 7, recording: false, loaded: true });
});
