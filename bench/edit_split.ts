/**
 * Where a change's wait went, from the API server's audit log: from the change's write to the
 * moment the operator sent the child's write that carried it (its watch, its queue, and its visit
 * up to the write), and that write itself, from sent to answered; and how long after the change
 * its children were written, by the API server's one clock (`reachOf`).
 */
import { type AuditEvent, WRITE_VERBS } from "../testing/audit_log.ts";

/** A change to a Ptemplate, and when (ms since epoch) it was written and its child seen. */
export interface Timed {
  /** The Ptemplate, and its Module. */
  name: string;
  writtenAt: number;
  seenAt?: number;
}

/** Per change that arrived: ms before the operator sent the write, and ms the write took. */
export interface Split {
  beforeWriteMs: number[];
  writeMs: number[];
  /** The same for each change, in the order given; undefined where no write carried it. */
  each: ({ beforeWriteMs: number; writeMs: number } | undefined)[];
}

/**
 * For each change that arrived, the operator's last write of its Module (`username`'s, in
 * `namespace`) sent after the change was written and answered by the time it was seen (with
 * `slackMs` for the watch beating the audit log's clock): the write that carried it.
 */
export function splitOf(
  changes: Timed[],
  audit: AuditEvent[],
  options: { username: string; namespace: string; slackMs?: number },
): Split {
  const slack = options.slackMs ?? 50;
  const writes = writesOf(audit, options);
  const each = changes.map((change) => {
    if (change.seenAt === undefined) return undefined;
    const carried = (writes.get(`modules/${change.name}`) ?? []).filter((w) =>
      w.sent >= change.writtenAt - slack && w.answered <= change.seenAt! + slack
    ).at(-1);
    if (!carried) return undefined;
    return {
      beforeWriteMs: Math.max(0, carried.sent - change.writtenAt),
      writeMs: carried.answered - carried.sent,
    };
  });
  const carried = each.filter((e) => e !== undefined);
  return {
    beforeWriteMs: carried.map((e) => e.beforeWriteMs),
    writeMs: carried.map((e) => e.writeMs),
    each,
  };
}

/** A write, when (ms since epoch) the API server received it and answered it. */
export interface Write {
  sent: number;
  answered: number;
}

/**
 * The writes of the objects in `namespace` (their bodies, not a subresource), by `resource/name`,
 * in the audit log's order: `username`'s, or with `others`, everyone else's.
 */
export function writesOf(
  audit: AuditEvent[],
  options: { username: string; namespace: string; others?: boolean },
): Map<string, Write[]> {
  const writes = new Map<string, Write[]>();
  for (const e of audit) {
    const ref = e.objectRef;
    if (
      (e.user.username === options.username) === Boolean(options.others) ||
      !WRITE_VERBS.has(e.verb) || ref?.subresource || ref?.namespace !== options.namespace ||
      !ref.name || !ref.resource || !e.stageTimestamp
    ) continue;
    const key = `${ref.resource}/${ref.name}`;
    const list = writes.get(key) ?? [];
    writes.set(key, list);
    list.push({
      sent: Date.parse(e.requestReceivedTimestamp),
      answered: Date.parse(e.stageTimestamp),
    });
  }
  return writes;
}

/**
 * The writes of `change`'s Module (in `writes`, from `writesOf`) from `windowMs` before it was
 * written to `windowMs` after it was seen, as ms from its write (negative: before it): the raw account of a change `splitOf` could not
 * split, say when the watch showed the child before the audit log's answer, or a clock ran late.
 */
export function writesNear(
  change: Timed,
  writes: Map<string, Write[]>,
  windowMs = 2_000,
): { sentMs: number; answeredMs: number }[] {
  const until = (change.seenAt ?? change.writtenAt) + windowMs;
  return (writes.get(`modules/${change.name}`) ?? [])
    .filter((w) => w.answered >= change.writtenAt - windowMs && w.sent <= until)
    .map((w) => ({ sentMs: w.sent - change.writtenAt, answeredMs: w.answered - change.writtenAt }));
}

/** A child a change must reach: its resource (`modules`, `daemonsets`) and name. */
export interface ChildName {
  resource: string;
  name: string;
}

/**
 * Per change, the ms from the API server's answer to the change (the last write of its Ptemplate
 * by someone other than `username` answered by the time the bench had it) to its answer to the
 * last of `children(change)`'s writes by `username` that carried it (sent after the change and
 * answered by the time the bench's watch saw it); undefined where the audit log has no such write.
 * Unlike `seenAt - writtenAt`, it leaves out how late the bench itself heard of either.
 */
export function reachOf<C extends Timed>(
  changes: C[],
  audit: AuditEvent[],
  options: {
    username: string;
    namespace: string;
    children: (change: C) => ChildName[];
    slackMs?: number;
  },
): (number | undefined)[] {
  const slack = options.slackMs ?? 50;
  const ours = writesOf(audit, options);
  const theirs = writesOf(audit, { ...options, others: true });
  return changes.map((change) => {
    if (change.seenAt === undefined) return undefined;
    const written = (theirs.get(`ptemplates/${change.name}`) ?? [])
      .map((w) => w.answered).filter((answered) => answered <= change.writtenAt + slack).at(-1);
    if (written === undefined) return undefined;
    let last = written;
    for (const child of options.children(change)) {
      const carried = (ours.get(`${child.resource}/${child.name}`) ?? []).filter((w) =>
        w.sent >= written - slack && w.answered <= change.seenAt! + slack
      ).at(-1);
      if (!carried) return undefined;
      last = Math.max(last, carried.answered);
    }
    return last - written;
  });
}
