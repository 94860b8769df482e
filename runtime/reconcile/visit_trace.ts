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
  /** How the visit ended (`reconciled`, `failed`, `gone`, …), for its record and span. */
  outcome: string;
  /** The metrics' result (`success`, `error`, `requeue_after`, …), when it counts as a reconcile. */
  result?: string;
  /** What happens next, in words (`again in 30 s`). */
  next?: string;
  /** What it failed with, if it did: the span's error, the record's message. */
  error?: unknown;
  /** Milliseconds the visit took. */
  tookMs: number;
}

/** One visit's span and record, filled as the visit goes (see the module doc). */
export class VisitTrace implements VisitRecorder {
  /** The visit's record, complete once it has ended. */
  readonly record: VisitRecord;
  readonly #span: Span;

  /** Starts the visit's span, with every cause folded into the visit an event on it. */
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

  /** Adds an answered write to the record. */
  wrote(write: WriteSample): void {
    this.record.writes.push(
      `${write.method} ${write.path}${write.dryRun ? " (dry run)" : ""} → ${write.code}`,
    );
  }

  /** Adds a recorded Event (its type and reason) to the record. */
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
