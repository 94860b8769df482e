/**
 * Finds what other field managers added to a child beyond what its plugin wants, from the
 * child's `metadata.managedFields`, and builds the JSON patch that takes it out again.
 *
 * Server-side apply only reclaims fields in our own field set, and the desired hash cannot see
 * additions, so a field someone else adds (`hostNetwork: true`, a second container, a toleration
 * of everything, KMM `rawArgs` that load another module) would otherwise stay for good. Why the
 * managed fields, and not a comparison of the live object with what we applied:
 *
 * - The API server records, per field manager, exactly the fields each write set (an Update owns
 *   what it changed, an Apply what it sent). So an addition by anyone is in a set that is not
 *   ours, named after who made it: `kubectl-patch`, `kubectl-edit`, a controller's name.
 * - Server defaults (`dnsPolicy`, `terminationMessagePath`, `revisionHistoryLimit`, …) belong to
 *   nobody once we have applied (or to us, from our create), and never to another manager unless
 *   that manager wrote them itself. A comparison with what we applied would have to know every
 *   default of every kind (and of every CRD, admission plugin and API server version) to tell
 *   them from additions; the field sets already say who wrote what.
 * - Status is written through the status subresource: entries of a subresource (`status`,
 *   `scale`) are not the child's body and are left alone, and so is `status` in any entry.
 *
 * What is tolerated, and why:
 * - `metadata`, except `ownerReferences`: labels and annotations others add to the object itself
 *   (`deprecated.daemonset.template.generation`, kubectl's last-applied, a backup tool's) change
 *   nothing the child does. A foreign owner reference does: it keeps the child alive after its
 *   parent is deleted (the garbage collector waits for every owner), so it is removed.
 * - `spec.template.metadata.annotations["kubectl.kubernetes.io/restartedAt"]`, which
 *   `kubectl rollout restart` writes: a timestamp that restarts the pods and grants nothing;
 *   removing it would only restart them once more.
 * - What a plugin declares for a kind (`OwnedKind.tolerate`).
 * - Fields owned by nobody: the defaults. A client can make its own field ownerless only by
 *   rewriting `managedFields` by hand. Clearing them is caught: with no entry of ours the child
 *   is applied again, and the API server then gives every field it did not get from us to
 *   `before-first-apply`, a manager like any other here. Rewriting the entries so that a field
 *   belongs to nobody while ours stays intact is not caught (that needs the API server's
 *   defaults for the kind, which only a dry-run per kind could tell).
 *
 * A field a foreign manager shares with us (the same value) is ours. One with another value is
 * drift, which the desired hash and `isSubset` already see, and our forced apply takes back.
 */
import type { KubeObject } from "../../kube/object.ts";
import { parseFieldPath, type Segment } from "../plugin/mod.ts";

/** One thing another field manager added: where it is, and who wrote it. */
export interface ForeignField {
  /** The field manager whose set holds it (`before-first-apply` when managedFields were cleared). */
  manager: string;
  /** For people: `spec.template.spec.containers[name=side]`. */
  path: string;
  /** RFC 6901 pointer into the live object, resolved against the cached object. */
  pointer: string;
  /** The live value, which the patch tests before removing it. */
  value: unknown;
  /** Index of the manager's entry in `metadata.managedFields`. */
  entry: number;
  /** The keys leading to it in that entry's `fieldsV1`. */
  setPath: string[];
}

/** A JSON Patch operation (RFC 6902), the ones we use. */
export type PatchOperation =
  | { op: "test"; path: string; value: unknown }
  | { op: "remove"; path: string }
  | { op: "replace"; path: string; value: unknown };

/** What every child tolerates from others, beside what a plugin adds for a kind. */
export const TOLERATED_EVERYWHERE: readonly string[] = [
  "status",
  'spec.template.metadata.annotations["kubectl.kubernetes.io/restartedAt"]',
];

type FieldSet = Record<string, unknown>;

/** Segments of a found field, and how people read it. */
interface Where {
  segments: Segment[];
  pointer: string;
  display: string;
}

const escapePointer = (key: string) => key.replaceAll("~", "~0").replaceAll("/", "~1");

function child(where: Where, segment: Segment, pointerKey: string, display: string): Where {
  return {
    segments: [...where.segments, segment],
    pointer: `${where.pointer}/${escapePointer(pointerKey)}`,
    display: where.display ? `${where.display}${display}` : display.replace(/^\./, ""),
  };
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** Equal as the API server compares list keys: numbers and their text alike. */
const sameKey = (a: unknown, b: unknown) =>
  a !== undefined && b !== undefined &&
  (typeof a === "object" ? JSON.stringify(a) === JSON.stringify(b) : String(a) === String(b));

/** The item of a live list a `k:`, `v:` or `i:` key names, and the desired item it is, if any. */
function resolveItem(
  key: string,
  live: unknown[],
  desired: unknown,
): { index: number; desired: unknown; display: string } | undefined {
  const wanted = Array.isArray(desired) ? desired : [];
  const kind = key.slice(0, 2);
  const body = key.slice(2);
  if (kind === "i:") {
    const index = Number(body);
    return { index, desired: wanted[index], display: `[${index}]` };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (kind === "v:") {
    const text = JSON.stringify(parsed);
    const index = live.findIndex((item) => JSON.stringify(item) === text);
    return {
      index,
      desired: wanted.find((item) => JSON.stringify(item) === text),
      display: `[${text}]`,
    };
  }
  if (kind !== "k:" || !isObject(parsed)) return undefined;
  const keys = Object.entries(parsed);
  const index = live.findIndex((item) =>
    isObject(item) && keys.every(([k, v]) => sameKey(item[k], v))
  );
  // A key field the plugin left for the server to default (a port's protocol) matches anything,
  // as long as one of them is given and equal.
  const match = wanted.find((item) =>
    isObject(item) && keys.some(([k, v]) => sameKey(item[k], v)) &&
    keys.every(([k, v]) => item[k] === undefined || sameKey(item[k], v))
  );
  return {
    index,
    desired: match,
    display: `[${keys.map(([k, v]) => `${k}=${typeof v === "object" ? JSON.stringify(v) : v}`)}]`,
  };
}

/** True when `pattern` names `segments` or one of its ancestors (list items are `*` in both). */
function under(segments: Segment[], pattern: Segment[]): boolean {
  return pattern.length <= segments.length && pattern.every((p, i) => p === segments[i]);
}

/**
 * The fields of `live` that field managers not in `ours` hold and `desired` does not have, apart
 * from what is tolerated. Entries without field sets (the cache keeps only foreign ones) and
 * subresource entries are skipped.
 */
export function foreignFields(
  live: KubeObject,
  desired: KubeObject,
  options: { ours: ReadonlySet<string>; tolerate?: readonly string[] },
): ForeignField[] {
  const tolerated = [...TOLERATED_EVERYWHERE, ...(options.tolerate ?? [])].map(parseFieldPath);
  const isTolerated = (segments: Segment[]) =>
    // Everything in metadata but owner references.
    (segments[0] === "metadata" && segments[1] !== undefined &&
      segments[1] !== "ownerReferences") ||
    tolerated.some((pattern) => under(segments, pattern));
  // Something tolerated lies below: look inside rather than take the whole subtree away.
  const coversTolerated = (segments: Segment[]) =>
    (segments.length === 1 && segments[0] === "metadata") ||
    tolerated.some((pattern) => pattern.length > segments.length && under(pattern, segments));
  const found: ForeignField[] = [];
  const entries = live.metadata?.managedFields ?? [];
  entries.forEach((entry, index) => {
    const manager = entry.manager ?? "";
    if (entry.subresource || options.ours.has(manager) || !isObject(entry.fieldsV1)) return;
    const walk = (
      set: FieldSet,
      liveNode: unknown,
      desiredNode: unknown,
      where: Where,
      setPath: string[],
    ) => {
      for (const [key, subset] of Object.entries(set)) {
        if (key === ".") continue;
        let next: Where;
        let liveChild: unknown;
        let desiredChild: unknown;
        if (key.startsWith("f:")) {
          const name = key.slice(2);
          if (!isObject(liveNode)) continue;
          liveChild = liveNode[name];
          desiredChild = isObject(desiredNode) ? desiredNode[name] : undefined;
          const display = /^[A-Za-z_][A-Za-z0-9_]*$/.test(name)
            ? `.${name}`
            : `[${JSON.stringify(name)}]`;
          next = child(where, name, name, display);
        } else {
          if (!Array.isArray(liveNode)) continue;
          const item = resolveItem(key, liveNode, desiredNode);
          if (!item || item.index < 0) continue;
          liveChild = liveNode[item.index];
          desiredChild = item.desired;
          next = child(where, "*", String(item.index), item.display);
        }
        if (liveChild === undefined || isTolerated(next.segments)) continue;
        const subPath = [...setPath, key];
        if (desiredChild === undefined && !coversTolerated(next.segments)) {
          found.push({
            manager,
            path: next.display,
            pointer: next.pointer,
            value: liveChild,
            entry: index,
            setPath: subPath,
          });
        } else if (isObject(subset)) {
          walk(subset, liveChild, desiredChild, next, subPath);
        }
      }
    };
    walk(entry.fieldsV1 as FieldSet, live, desired, { segments: [], pointer: "", display: "" }, []);
  });
  return found;
}

/** `set` without the subtrees at `paths`; a node left empty by that goes too. */
function pruneSet(set: FieldSet, paths: string[][]): FieldSet {
  const out: FieldSet = {};
  for (const [key, sub] of Object.entries(set)) {
    const here = paths.filter((p) => p[0] === key);
    if (here.some((p) => p.length === 1)) continue;
    if (!here.length || !isObject(sub)) {
      out[key] = sub;
      continue;
    }
    const pruned = pruneSet(sub, here.map((p) => p.slice(1)));
    if (Object.keys(pruned).length) out[key] = pruned;
  }
  return out;
}

/** Compares pointers so that later list items (and deeper fields) come first. */
function removalOrder(a: string, b: string): number {
  const x = a.split("/");
  const y = b.split("/");
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] === y[i]) continue;
    const [m, n] = [Number(x[i]), Number(y[i])];
    if (/^\d+$/.test(x[i]) && /^\d+$/.test(y[i])) return n - m;
    return x[i] < y[i] ? 1 : -1;
  }
  return y.length - x.length;
}

/**
 * The JSON patch that removes `found` from `live` and from the field sets that held them, guarded
 * by the uid, each entry's current field set and each value: if anything moved since the cache
 * saw it, the API server refuses the whole patch (422) and nothing is changed.
 */
export function removalPatch(live: KubeObject, found: ForeignField[]): PatchOperation[] {
  const entries = live.metadata?.managedFields ?? [];
  // A field under another found field goes with it.
  const pointers = [...new Set(found.map((f) => f.pointer))];
  const outermost = pointers.filter((p) => !pointers.some((q) => q !== p && p.startsWith(`${q}/`)));
  const tests: PatchOperation[] = [{
    op: "test",
    path: "/metadata/uid",
    value: live.metadata?.uid,
  }];
  const sets: PatchOperation[] = [];
  const dropped: number[] = [];
  for (const index of [...new Set(found.map((f) => f.entry))].sort((a, b) => a - b)) {
    const entry = entries[index];
    const at = `/metadata/managedFields/${index}`;
    tests.push(
      { op: "test", path: `${at}/manager`, value: entry.manager },
      { op: "test", path: `${at}/fieldsV1`, value: entry.fieldsV1 },
    );
    const pruned = pruneSet(
      entry.fieldsV1 as FieldSet,
      found.filter((f) => f.entry === index).map((f) => f.setPath),
    );
    if (Object.keys(pruned).length) {
      sets.push({ op: "replace", path: `${at}/fieldsV1`, value: pruned });
    } else dropped.push(index);
  }
  const removals: PatchOperation[] = [];
  for (const pointer of outermost.sort(removalOrder)) {
    tests.push({
      op: "test",
      path: pointer,
      value: found.find((f) => f.pointer === pointer)!.value,
    });
    removals.push({ op: "remove", path: pointer });
  }
  const entryRemovals = dropped.sort((a, b) => b - a).map((index): PatchOperation => ({
    op: "remove",
    path: `/metadata/managedFields/${index}`,
  }));
  return [...tests, ...sets, ...entryRemovals, ...removals];
}

/** `a, b (set by m); c (set by n)`, for the Event; at most `max` fields, then how many more. */
export function describeForeign(found: ForeignField[], max = 8): string {
  const byManager = new Map<string, string[]>();
  for (const f of found.slice(0, max)) {
    byManager.set(f.manager, [...(byManager.get(f.manager) ?? []), f.path]);
  }
  const parts = [...byManager].map(([manager, paths]) => `${paths.join(", ")} (set by ${manager})`);
  const more = found.length - max;
  return parts.join("; ") + (more > 0 ? `; and ${more} more` : "");
}
