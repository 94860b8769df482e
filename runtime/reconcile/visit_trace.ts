/**
 * The trace and the record of one visit, filled as it goes: an OpenTelemetry span (each cause
 * folded into the visit an event on it, its time in the queue an attribute, the API requests it
 * makes child spans, the trace id on every log line written meanwhile) and a `VisitRecord` for
 * `explain`. With OpenTelemetry off the span records nothing; the record is kept either way.
 */
import type { WriteSample } from "../../kube/request_sender.ts";
import { endSpan, operatorTracer, type Span, withSpan } from "../../util/tracer.ts";
import type { EventInput } from "../observe/mod.ts";
import type { Cause } from "./cause.ts";
import type { VisitRecord } from "./visit_history.ts";
import type { VisitRecorder } from "./visitor.ts";
import type { Taken } from "./work_queue.ts";

/** How a visit ended, for its span and record. */
export interface VisitEnd {
  outcome: string;
  /** The metrics' result (`success`, `error`, `requeue_after`, …), when it counts as a reconcile. */
  result?: string;
  next?: string;
  error?: unknown;
  tookMs: number;
}

export class VisitTrace implements VisitRecorder {
  readonly record: VisitRecord;
  readonly #span: Span;

  constructor(controller: string, taken: Taken) {
    const { key, causes, priority, waitedMs } = taken;
    this.#span = operatorTracer().startSpan(`reconcile ${controller}`, {
      attributes: {
        "reconcile.controller": controller,
        "reconcile.object": key,
        "reconcile.priority": priority,
        "reconcile.queue.wait_ms": waitedMs,
        "reconcile.causes.more": causes.more,
      },
    });
    for (const one of causes.list) {
      this.#span.addEvent(`cause: ${one.kind}`, causeAttributes(one), one.at);
    }
    const traceId = this.#span.isRecording() ? this.#span.spanContext().traceId : undefined;
    this.record = {
      at: new Date().toISOString(),
      controller,
      key,
      causes: causes.list.map(describeCause),
      moreCauses: causes.more,
      priority,
      waitedMs,
      tookMs: 0,
      outcome: "running",
      writes: [],
      events: [],
      conditions: [],
      traceId,
    };
  }

  /** Runs `fn` inside the visit's span. */
  run<R>(fn: () => R): R {
    return withSpan(this.#span, fn);
  }

  wrote(write: WriteSample): void {
    this.record.writes.push(
      `${write.method} ${write.path}${write.dryRun ? " (dry run)" : ""} → ${write.code}`,
    );
  }

  event(event: EventInput): void {
    this.record.events.push(`${event.type ?? "Normal"} ${event.reason}`);
  }

  status(conditions: unknown): void {
    if (!Array.isArray(conditions)) return;
    this.record.conditions = conditions.map((c: Record<string, unknown>) =>
      `${c.type}=${c.status}${c.reason ? ` (${c.reason})` : ""}`
    );
  }

  /** The visit ended: its span ends, and its record is complete. */
  end(end: VisitEnd): VisitRecord {
    const record = this.record;
    record.outcome = end.outcome;
    record.next = end.next;
    record.tookMs = Math.round(end.tookMs);
    if (end.error !== undefined) {
      record.error = end.error instanceof Error ? end.error.message : String(end.error);
    }
    this.#span.setAttributes({
      "reconcile.outcome": end.outcome,
      ...(end.result ? { "reconcile.result": end.result } : {}),
      ...(end.next ? { "reconcile.next": end.next } : {}),
      "reconcile.writes": record.writes.length,
    });
    endSpan(this.#span, end.error);
    return record;
  }
}

/** A cause in a few words: `watched DaemonSet ns/x (status)`. */
export function describeCause(one: Cause): string {
  const times = one.times && one.times > 1 ? `×${one.times}` : undefined;
  return [one.kind, one.object, one.change && `(${one.change})`, times].filter(Boolean).join(" ");
}

function causeAttributes(one: Cause): Record<string, string> {
  const out: Record<string, string> = { "cause.kind": one.kind };
  if (one.object) out["cause.object"] = one.object;
  if (one.change) out["cause.change"] = one.change;
  return out;
}
