/**
 * The operator's OpenTelemetry tracer, through the standard API (`@opentelemetry/api`), which Deno
 * binds to its own exporter when OpenTelemetry is on (`OTEL_DENO=true` under `deno run`; built
 * into the compiled binary by its compile task, which traces once an OTLP endpoint is set).
 * Otherwise spans record nothing, and a span costs a few small allocations.
 *
 * The API package loads as CommonJS (its ES module build is not one Deno can load), which wakes
 * Node's module loader: a few MiB of every process. So it is loaded only where tracing may be on.
 */
import type { Context, Span, SpanContext, Tracer } from "@opentelemetry/api";

export type { Span };

/** `SpanKind` and `SpanStatusCode` of the API, whose values are the OTLP protocol's. */
export const SpanKind = { INTERNAL: 0, SERVER: 1, CLIENT: 2 } as const;
export const SpanStatusCode = { UNSET: 0, OK: 1, ERROR: 2 } as const;

/**
 * Whether spans may go anywhere: OpenTelemetry switched on for `deno run`, or an endpoint given
 * (the compiled binary's). A process that may not read them (a plugin's, say) loads the API.
 */
function tracingMayBeOn(): boolean {
  try {
    const on = Deno.env.get("OTEL_DENO");
    return on === "true" || on === "1" ||
      Deno.env.get("OTEL_EXPORTER_OTLP_ENDPOINT") !== undefined ||
      Deno.env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") !== undefined;
  } catch {
    return true;
  }
}

const api = tracingMayBeOn() ? await import("@opentelemetry/api") : undefined;

/** Whether the API was loaded (tracing may be on). */
export function tracingApiLoaded(): boolean {
  return api !== undefined;
}

const INVALID_CONTEXT: SpanContext = {
  traceId: "00000000000000000000000000000000",
  spanId: "0000000000000000",
  traceFlags: 0,
};

/** What the API hands out with no exporter bound: a span that records nothing. */
const NOOP_SPAN: Span = {
  spanContext: () => INVALID_CONTEXT,
  setAttribute: () => NOOP_SPAN,
  setAttributes: () => NOOP_SPAN,
  addEvent: () => NOOP_SPAN,
  addLink: () => NOOP_SPAN,
  addLinks: () => NOOP_SPAN,
  setStatus: () => NOOP_SPAN,
  updateName: () => NOOP_SPAN,
  end: () => {},
  isRecording: () => false,
  recordException: () => {},
};

/** The part of a tracer the operator uses. */
export interface OperatorTracer {
  startSpan: Tracer["startSpan"];
}

const NOOP_TRACER: OperatorTracer = { startSpan: () => NOOP_SPAN };

let tracer: OperatorTracer | undefined;

/** The tracer every span of the operator comes from. */
export function operatorTracer(): OperatorTracer {
  return tracer ??= api?.trace.getTracer("ptemplate-operator") ?? NOOP_TRACER;
}

/** Runs `fn` with `span` as the active span: the spans and log lines it makes belong to it. */
export function withSpan<T>(span: Span, fn: () => T): T {
  if (!api) return fn();
  const active: Context = api.trace.setSpan(api.context.active(), span);
  return api.context.with(active, fn);
}

/** The active span's ids, for a log line, when a span is recording; else nothing. */
export function activeTraceIds(): { trace_id: string; span_id: string } | undefined {
  const span = api?.trace.getActiveSpan();
  if (!span?.isRecording()) return undefined;
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

/** Ends `span` as failed with `error`, or as fine. */
export function endSpan(span: Span, error?: unknown): void {
  if (error !== undefined) {
    span.recordException(error instanceof Error ? error : String(error));
    span.setStatus({
      code: SpanStatusCode.ERROR,
      message: error instanceof Error ? error.message : String(error),
    });
  }
  span.end();
}

/** A moment worth a span of its own (a leader elected, a lease lost): it starts and ends now. */
export function instantSpan(name: string, attributes: Record<string, string | number>): void {
  operatorTracer().startSpan(name, { attributes }).end();
}
