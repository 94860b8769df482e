/**
 * Flattens OTLP JSON (what the collector's file exporter writes, one export request a line) into
 * one plain object per span or log record, with its resource and scope beside it.
 */

/** An attribute value: OTLP's AnyValue as plain JSON (64-bit integers become numbers, bytes base64). */
export type AttributeValue =
  | string
  | number
  | boolean
  | null
  | AttributeValue[]
  | { [key: string]: AttributeValue };

/** Attributes by key. */
export type Attributes = Record<string, AttributeValue>;

/** Who emitted it: the tracer's or logger's name and version. */
export interface Scope {
  name: string;
  version?: string;
}

/**
 * OTLP's span kind, by name: OTLP counts from UNSPECIFIED = 0, while `@opentelemetry/api`'s
 * `SpanKind` counts from INTERNAL = 0, so numbers would invite off-by-one asserts.
 */
export type SpanKindName =
  | "unspecified"
  | "internal"
  | "server"
  | "client"
  | "producer"
  | "consumer";

/** One span, as received. */
export interface FlatSpan {
  /** 32 hex digits. */
  traceId: string;
  /** 16 hex digits. */
  spanId: string;
  /** The parent's `spanId`; undefined for a root span. */
  parentSpanId: string | undefined;
  name: string;
  kind: SpanKindName;
  startTimeUnixNano: bigint;
  endTimeUnixNano: bigint;
  attributes: Attributes;
  events: { name: string; timeUnixNano: bigint; attributes: Attributes }[];
  links: { traceId: string; spanId: string; attributes: Attributes }[];
  /** `message` only when the span set one. */
  status: { code: "unset" | "ok" | "error"; message?: string };
  resource: Attributes;
  scope: Scope;
}

/** One log record, as received (Deno sends `console.*` output as these). */
export interface FlatLog {
  timeUnixNano: bigint;
  observedTimeUnixNano: bigint;
  /** 1–24 (9 is INFO, 13 WARN, 17 ERROR); 0 when unset. */
  severityNumber: number;
  severityText: string;
  body: AttributeValue;
  attributes: Attributes;
  /** The span that was active when it was logged, if any. */
  traceId: string | undefined;
  spanId: string | undefined;
  resource: Attributes;
  scope: Scope;
}

// The subset of OTLP JSON read here; every field is optional on the wire (zero values are omitted).
interface KeyValue {
  key: string;
  value?: AnyValue;
}
interface AnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
  arrayValue?: { values?: AnyValue[] };
  kvlistValue?: { values?: KeyValue[] };
  bytesValue?: string;
}
interface Resource {
  attributes?: KeyValue[];
}
interface OtlpScope {
  name?: string;
  version?: string;
}
interface Span {
  traceId?: string;
  spanId?: string;
  parentSpanId?: string;
  name?: string;
  kind?: number;
  startTimeUnixNano?: string;
  endTimeUnixNano?: string;
  attributes?: KeyValue[];
  events?: { name?: string; timeUnixNano?: string; attributes?: KeyValue[] }[];
  links?: { traceId?: string; spanId?: string; attributes?: KeyValue[] }[];
  status?: { code?: number; message?: string };
}
interface LogRecord {
  timeUnixNano?: string;
  observedTimeUnixNano?: string;
  severityNumber?: number;
  severityText?: string;
  body?: AnyValue;
  attributes?: KeyValue[];
  traceId?: string;
  spanId?: string;
}
interface TracesData {
  resourceSpans?: { resource?: Resource; scopeSpans?: { scope?: OtlpScope; spans?: Span[] }[] }[];
}
interface LogsData {
  resourceLogs?: {
    resource?: Resource;
    scopeLogs?: { scope?: OtlpScope; logRecords?: LogRecord[] }[];
  }[];
}

const KINDS: SpanKindName[] = [
  "unspecified",
  "internal",
  "server",
  "client",
  "producer",
  "consumer",
];
const STATUS_CODES = ["unset", "ok", "error"] as const;

/**
 * The JSON documents of an OTLP JSON lines file, in order. A last line without its newline is
 * still being written and is left for the next read; any other line that is not JSON throws,
 * naming the file and line, rather than dropping what it held.
 */
export function parseJsonLines(text: string, source: string): unknown[] {
  const complete = text.slice(0, text.lastIndexOf("\n") + 1);
  return complete.split("\n").flatMap((line, index) => {
    if (!line.trim()) return [];
    try {
      return [JSON.parse(line)];
    } catch (error) {
      throw new Error(
        `${source}:${index + 1} is not OTLP JSON (${(error as Error).message}): ${
          line.slice(0, 200)
        }`,
      );
    }
  });
}

/** Every span in these `TracesData` documents, in the order received. */
export function flattenSpans(documents: unknown[]): FlatSpan[] {
  return (documents as TracesData[]).flatMap((doc) =>
    (doc.resourceSpans ?? []).flatMap(({ resource, scopeSpans }) =>
      (scopeSpans ?? []).flatMap(({ scope, spans }) =>
        (spans ?? []).map((span): FlatSpan => ({
          traceId: span.traceId ?? "",
          spanId: span.spanId ?? "",
          parentSpanId: span.parentSpanId || undefined,
          name: span.name ?? "",
          kind: KINDS[span.kind ?? 0] ?? "unspecified",
          startTimeUnixNano: BigInt(span.startTimeUnixNano ?? 0),
          endTimeUnixNano: BigInt(span.endTimeUnixNano ?? 0),
          attributes: attributes(span.attributes),
          events: (span.events ?? []).map((event) => ({
            name: event.name ?? "",
            timeUnixNano: BigInt(event.timeUnixNano ?? 0),
            attributes: attributes(event.attributes),
          })),
          links: (span.links ?? []).map((link) => ({
            traceId: link.traceId ?? "",
            spanId: link.spanId ?? "",
            attributes: attributes(link.attributes),
          })),
          status: {
            code: STATUS_CODES[span.status?.code ?? 0] ?? "unset",
            ...(span.status?.message ? { message: span.status.message } : {}),
          },
          resource: attributes(resource?.attributes),
          scope: flatScope(scope),
        }))
      )
    )
  );
}

/** Every log record in these `LogsData` documents, in the order received. */
export function flattenLogs(documents: unknown[]): FlatLog[] {
  return (documents as LogsData[]).flatMap((doc) =>
    (doc.resourceLogs ?? []).flatMap(({ resource, scopeLogs }) =>
      (scopeLogs ?? []).flatMap(({ scope, logRecords }) =>
        (logRecords ?? []).map((record): FlatLog => ({
          timeUnixNano: BigInt(record.timeUnixNano ?? 0),
          observedTimeUnixNano: BigInt(record.observedTimeUnixNano ?? 0),
          severityNumber: record.severityNumber ?? 0,
          severityText: record.severityText ?? "",
          body: anyValue(record.body),
          attributes: attributes(record.attributes),
          traceId: record.traceId || undefined,
          spanId: record.spanId || undefined,
          resource: attributes(resource?.attributes),
          scope: flatScope(scope),
        }))
      )
    )
  );
}

function flatScope(scope: OtlpScope | undefined): Scope {
  return { name: scope?.name ?? "", ...(scope?.version ? { version: scope.version } : {}) };
}

function attributes(list: KeyValue[] | undefined): Attributes {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, anyValue(value)]));
}

function anyValue(value: AnyValue | undefined): AttributeValue {
  if (!value) return null;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  // int64 travels as a decimal string in OTLP JSON.
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(anyValue);
  if (value.kvlistValue) return attributes(value.kvlistValue.values);
  if (value.bytesValue !== undefined) return value.bytesValue;
  // An AnyValue with no field set is OTLP's empty value; pdata writes `{}` for it.
  return null;
}
