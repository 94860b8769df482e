/**
 * What the main isolate and a plugin's Worker say to each other, and how an error crosses between
 * them keeping the class the runtime decides by (a PermanentError stays one, a TypeError is still
 * a bug, an ApiError keeps its code).
 */
import { ApiError } from "../../kube/errors.ts";
import { PermanentError, TemporaryError } from "../plugin/mod.ts";

/** The plugin functions a Worker calls for the main isolate. */
export type CallName =
  | "reconcile"
  | "finalize"
  | "filter"
  | "watchFilter"
  | "map"
  | "onDeleted"
  | "default"
  | "validate";

/** What the Worker is given when it starts. */
export interface WorkerStart {
  /** The URL of the plugin's module, the one the main isolate imported. */
  url: string;
  /** The export that is the plugin. */
  exportName: string;
  /** Its name, to check the export is the plugin meant. */
  name: string;
  /** Where a synchronous call's answer is written, and the flag that says it is (sync_answer.ts). */
  shared: SharedArrayBuffer;
}

/** From the main isolate to the Worker. */
export type ToWorker =
  | { type: "call"; id: number; call: CallName; index?: number; args: unknown[] }
  | { type: "abort"; id: number }
  | { type: "answer"; op: number; value?: unknown; error?: EncodedError };

/** From the Worker to the main isolate. */
export type FromWorker =
  | { type: "ready" }
  | { type: "load-failed"; message: string }
  | { type: "result"; id: number; value?: unknown; error?: EncodedError }
  /** A synchronous context call: the Worker waits until its answer is in `shared`. */
  | { type: "sync"; request: SyncRequest }
  /** An awaited context call: `client.get(…)`, `requesterMay(…)`. */
  | { type: "op"; id: number; op: number; method: string; args: unknown[] }
  /** Context calls nobody waits for. */
  | { type: "event"; id: number; object: unknown; event: unknown }
  | { type: "log"; id: number; level: string; message: string; properties: unknown }
  | {
    type: "metric";
    kind: "counter" | "gauge" | "histogram";
    name: string;
    help: string;
    labelNames: string[];
    buckets?: number[];
    method: string;
    args: unknown[];
  };

/** A synchronous context call, on the sync port: a cache read, `installed`, `problems`. */
export interface SyncRequest {
  /** The plugin call it is made in (whose context answers it). */
  id: number;
  /** Its own number, which the answer carries (sync_answer.ts). */
  call: number;
  method: string;
  resource?: unknown;
  args: unknown[];
}

/** An error as it crosses. */
export interface EncodedError {
  name: string;
  message: string;
  reason?: string;
  retryAfterMs?: number;
  code?: number;
  details?: unknown;
}

/** `error` as it can cross. */
export function encodeError(error: unknown): EncodedError {
  if (!(error instanceof Error)) return { name: "Error", message: String(error) };
  const encoded: EncodedError = { name: error.name, message: error.message };
  if (error instanceof PermanentError) encoded.reason = error.reason;
  if (error instanceof TemporaryError) encoded.retryAfterMs = error.retryAfterMs;
  if (error instanceof ApiError) {
    encoded.code = error.code;
    encoded.reason = error.reason;
    encoded.details = cloneable(error.details);
  }
  return encoded;
}

const BUGS: Record<string, ErrorConstructor> = {
  TypeError,
  RangeError,
  ReferenceError,
  SyntaxError,
};

/** The error `encoded` was, as near as its class goes. */
export function decodeError(encoded: EncodedError): Error {
  switch (encoded.name) {
    case "PermanentError":
      return new PermanentError(encoded.message, { reason: encoded.reason });
    case "TemporaryError":
      return new TemporaryError(encoded.message, { retryAfterMs: encoded.retryAfterMs });
    case "ApiError": {
      const error = new ApiError({
        code: encoded.code ?? 0,
        reason: encoded.reason ?? "Unknown",
        message: encoded.message,
        details: encoded.details as ApiError["details"],
      });
      // The message said where already.
      Object.defineProperty(error, "message", { value: encoded.message });
      return error;
    }
  }
  const error = new (BUGS[encoded.name] ?? Error)(encoded.message);
  if (!(encoded.name in BUGS) && encoded.name !== "Error") {
    Object.defineProperty(error, "name", { value: encoded.name });
  }
  return error;
}

/** `value` as structured clone takes it: functions and signals dropped, errors kept. */
export function cloneable(value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== "object") {
    return typeof value === "function" || typeof value === "symbol" ? undefined : value;
  }
  if (depth > 32 || value instanceof AbortSignal) return undefined;
  if (value instanceof Error || value instanceof Date || value instanceof Uint8Array) return value;
  if (Array.isArray(value)) return value.map((v) => cloneable(v, depth + 1));
  return Object.fromEntries(
    Object.entries(value).flatMap(([k, v]) => {
      const c = cloneable(v, depth + 1);
      return c === undefined ? [] : [[k, c]];
    }),
  );
}
