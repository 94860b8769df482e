/** The API server's audit log as tests read it: its events, and which verbs write. */
import { join } from "node:path";

/** The fields of a kube-apiserver audit event that tests look at. */
export interface AuditEvent {
  /** The request's verb: `get`, `list`, `watch`, `create`, `patch`, … */
  verb: string;
  /** Who: a pod-bound token's pod is in `extra` (`authentication.kubernetes.io/pod-name`). */
  user: { username: string; groups?: string[]; extra?: Record<string, string[]> };
  /** The object the request was about, when it was about one. */
  objectRef?: {
    apiGroup?: string;
    resource?: string;
    subresource?: string;
    namespace?: string;
    name?: string;
  };
  /** The answer; a refusal's message too. */
  responseStatus?: { code: number; message?: string };
  /** The path and query the request was sent to. */
  requestURI: string;
  /** The client's `User-Agent`, which tells one client of a test from another. */
  userAgent?: string;
  /** RFC 3339 with microseconds, when the API server received the request. */
  requestReceivedTimestamp: string;
  /** RFC 3339 with microseconds, when it answered (the change, if any, was made by then). */
  stageTimestamp?: string;
}

/** The verbs that change something (a watch or a read never does). */
export const WRITE_VERBS: ReadonlySet<string> = new Set([
  "create",
  "update",
  "patch",
  "delete",
  "deletecollection",
]);

/**
 * Whether the request made an object: a `create`, or a `patch` or `update` that created it (as a
 * create-only apply creates the operator's children). Only a made object is answered 201 Created.
 */
export function madeAnObject(e: AuditEvent): boolean {
  return e.responseStatus?.code === 201;
}

/**
 * The events of an audit log read while the API server writes it: only whole lines are events yet
 * (the last one may be half written).
 */
export function parseAuditLog(text: string): AuditEvent[] {
  const whole = text.split("\n").slice(0, -1);
  return whole.filter((line) => line.trim()).map((line) => JSON.parse(line));
}

/**
 * Every event of the audit log in `dir`, oldest first: the API server rotates `audit.log` past 100
 * MiB (its backups are `audit-<time>.log`, whose names sort by time), so a long run's events are in
 * several files.
 */
export async function readAuditLog(dir: string): Promise<AuditEvent[]> {
  const backups: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isFile && /^audit-.+\.log$/.test(entry.name)) backups.push(entry.name);
  }
  const events: AuditEvent[] = [];
  for (const name of [...backups.sort(), "audit.log"]) {
    const text = await Deno.readTextFile(join(dir, name)).catch(() => "");
    for (const event of parseAuditLog(text)) events.push(event);
  }
  return events;
}
