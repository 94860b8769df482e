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
export function readAuditLog(dir: string): Promise<AuditEvent[]> {
  return new AuditTail(dir).read();
}

/**
 * The audit log in `dir` read as it grows: each `read` returns the events written since the one
 * before, parsing only the new whole lines: a bench that waits for quiet looks every few seconds,
 * and parsing a long run's whole log at each look would load the machine it measures. Rotation is
 * followed: the file read so far reappears as the newest backup, and is read on from where it was
 * left.
 */
export class AuditTail {
  readonly #dir: string;
  /** Backups read to their end. */
  readonly #read = new Set<string>();
  /** Bytes of `audit.log` read so far (to the end of its last whole line). */
  #offset = 0;

  /** A reader of the audit log in `dir` (the control plane's folder), nothing read yet. */
  constructor(dir: string) {
    this.#dir = dir;
  }

  /** The events written since the last call (every event, the first time), oldest first. */
  async read(): Promise<AuditEvent[]> {
    const backups: string[] = [];
    for await (const entry of Deno.readDir(this.#dir)) {
      const name = entry.name;
      if (entry.isFile && /^audit-.+\.log$/.test(name) && !this.#read.has(name)) backups.push(name);
    }
    const events: AuditEvent[] = [];
    for (const name of backups.sort()) {
      // The oldest backup not read yet was `audit.log` while it was read; any later one is new.
      const { text } = await wholeLinesFrom(join(this.#dir, name), this.#offset);
      events.push(...parseAuditLog(text));
      this.#offset = 0;
      this.#read.add(name);
    }
    const { text, bytes } = await wholeLinesFrom(join(this.#dir, "audit.log"), this.#offset);
    events.push(...parseAuditLog(text));
    this.#offset += bytes;
    return events;
  }
}

/**
 * The text of `path` from byte `offset` to the end of its last whole line, and how many bytes that
 * is; a file not there yet has none.
 */
async function wholeLinesFrom(
  path: string,
  offset: number,
): Promise<{ text: string; bytes: number }> {
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return { text: "", bytes: 0 };
    throw error;
  }
  await file.seek(offset, Deno.SeekMode.Start);
  const data = new Uint8Array(await new Response(file.readable).arrayBuffer());
  const bytes = data.lastIndexOf(0x0a) + 1;
  return { text: new TextDecoder().decode(data.subarray(0, bytes)), bytes };
}
