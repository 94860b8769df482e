/**
 * The operator's OpenTelemetry tracer, through the standard API (`@opentelemetry/api`), which Deno
 * binds to its own exporter when OpenTelemetry is on (`OTEL_DENO=true` under `deno run`; built
 * into the compiled binary by its compile task). Otherwise the API hands out spans that record
 * nothing, and a span costs a few small allocations.
 */
import {
  context,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  type Tracer,
} from "@opentelemetry/api";

export { context, type Span, SpanKind, SpanStatusCode, trace };

let tracer: Tracer | undefined;

/** The tracer every span of the operator comes from. */
export function operatorTracer(): Tracer {
  return tracer ??= trace.getTracer("ptemplate-operator");
}

/** Runs `fn` with `span` as the active span: the spans and log lines it makes belong to it. */
export function withSpan<T>(span: Span, fn: () => T): T {
  return context.with(trace.setSpan(context.active(), span), fn);
}

/** The active span's ids, for a log line, when a span is recording; else nothing. */
export function activeTraceIds(): { trace_id: string; span_id: string } | undefined {
  const span = trace.getActiveSpan();
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
