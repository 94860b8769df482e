/**
 * Structured logs through LogTape: text on a terminal, JSON lines otherwise (in a pod), the
 * context (controller, object) on every line, the trace (`trace_id`, `span_id`) on every line
 * written inside a traced span, and secrets redacted before anything is written.
 */
import {
  configureSync,
  getLogger,
  type Logger as LogTapeLogger,
  type LogLevel as LogTapeLevel,
  type LogRecord as LogTapeRecord,
} from "@logtape/logtape";
import { activeTraceIds } from "../../util/tracer.ts";

/**
 * LogTape's `Logger`: `info("… {key} …", { key })`, `with({ … })`, documented in LogTape.
 * @ignore
 */
export type Logger = LogTapeLogger;
/**
 * LogTape's log levels: `trace`, `debug`, `info`, `warning`, `error`, `fatal`.
 * @ignore
 */
export type LogLevel = LogTapeLevel;
/**
 * LogTape's `LogRecord`, what one log call made: level, category, message parts, properties.
 * @ignore
 */
export type LogRecord = LogTapeRecord;
/** How log lines are written: text, JSON lines, or text on a terminal and JSON otherwise. */
export type LogFormat = "text" | "json" | "auto";

const ROOT = "ptemplate";
const SECRET_KEY = /token|password|secret|authorization|private.?key|client.?key|credential/i;
const BEARER = /\b(Bearer\s+)[A-Za-z0-9._~+/=-]+/g;

/** Replaces values under secret-looking keys, and bearer tokens inside strings. */
export function redact(value: unknown, depth = 0): unknown {
  if (typeof value === "string") return value.replace(BEARER, "$1[redacted]");
  if (depth > 6 || value === null || typeof value !== "object") return value;
  if (value instanceof Error) {
    return { name: value.name, message: redact(value.message, depth + 1) };
  }
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  return Object.fromEntries(
    Object.entries(value).map((
      [k, v],
    ) => [k, SECRET_KEY.test(k) ? "[redacted]" : redact(v, depth + 1)]),
  );
}

function messageText(record: LogRecord): string {
  return record.message.map((part, i) =>
    i % 2 === 0 ? String(part) : typeof part === "string" ? part : JSON.stringify(redact(part))
  ).join("");
}

/** One JSON object per line: `time`, `level`, `logger`, `msg`, then the properties. */
export function jsonLine(record: LogRecord): string {
  return JSON.stringify({
    time: new Date(record.timestamp).toISOString(),
    level: record.level,
    logger: record.category.join("."),
    msg: String(redact(messageText(record))),
    ...(redact(record.properties) as Record<string, unknown>),
    // Written inside a traced reconcile (or review): its trace, to find the one from the other.
    ...activeTraceIds(),
  }) + "\n";
}

/**
 * `15:04:05.000 INFO  controller msg key=value …` for people: the properties the message does
 * not already show. One whose value is `undefined` (a cluster-wide informer's namespace) is left
 * out, as JSON leaves it out, rather than printed as `namespace=undefined`.
 */
export function textLine(record: LogRecord): string {
  const time = new Date(record.timestamp).toISOString().slice(11, 23);
  const shown = typeof record.rawMessage === "string" ? record.rawMessage : "";
  const properties = {
    ...(redact(record.properties) as Record<string, unknown>),
    ...activeTraceIds(),
  };
  const props = Object.entries(properties)
    .filter(([k, v]) => v !== undefined && !shown.includes(`{${k}}`))
    .map(([k, v]) => `${k}=${typeof v === "string" && !/\s/.test(v) ? v : JSON.stringify(v)}`)
    .join(" ");
  const category = record.category.slice(1).join(".") || ROOT;
  return `${time} ${record.level.toUpperCase().padEnd(7)} ${category}: ${
    redact(messageText(record))
  }${props ? ` ${props}` : ""}\n`;
}

let configured = false;

/**
 * Sets up logging once per process. `auto` picks text when stderr is a terminal and JSON
 * otherwise. Lines go to stderr synchronously, so nothing is lost on exit.
 */
export function setupLogging(options: { level?: LogLevel; format?: LogFormat } = {}): void {
  const format = options.format === "auto" || !options.format
    ? (Deno.stderr.isTerminal() ? "text" : "json")
    : options.format;
  const render = format === "json" ? jsonLine : textLine;
  const encoder = new TextEncoder();
  configureSync({
    reset: configured,
    sinks: { stderr: (record) => void Deno.stderr.writeSync(encoder.encode(render(record))) },
    loggers: [
      { category: [ROOT], lowestLevel: options.level ?? "info", sinks: ["stderr"] },
      { category: ["logtape", "meta"], lowestLevel: "warning", sinks: ["stderr"] },
    ],
  });
  configured = true;
}

/** The logger for one part of the operator, e.g. `log("controller", "kmm-module")`. */
export function log(...category: string[]): Logger {
  return getLogger([ROOT, ...category]);
}
