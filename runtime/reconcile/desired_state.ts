/**
 * Pure decisions about desired objects: how a child is stamped (owner reference, labels, hash)
 * and whether the cached object already matches, so that a converged operator writes nothing.
 */
import { createHash } from "node:crypto";
import type { KubeObject, Unstructured } from "../../kube/object.ts";
import type { OperatorIdentity } from "../identity/mod.ts";

/** The operator's own names a stamped child carries. */
export type ChildStamp = Pick<OperatorIdentity, "pluginLabel" | "hashAnnotation">;

/**
 * JSON with object keys sorted, so equal values give equal strings: the text
 * `JSON.stringify` gives of a copy whose keys were put in order (array-index keys, which an object
 * always lists first, in numeric order; the others by UTF-16 code units), written in one pass.
 * Every child's hash annotation is made of it, so its output must never change.
 */
export function stableStringify(value: unknown): string {
  // Undefined for undefined alone, as JSON.stringify's.
  return JSON.stringify(ordered(value));
}

/**
 * A copy of `value` whose objects have their keys inserted in order, for JSON.stringify to write
 * as they come: array-index keys an object lists first by itself, in numeric order, and the
 * others in the order they were inserted. A copy is less garbage, per child and visit, than
 * writing the text key by key.
 */
function ordered(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") {
    return ordered((value as { toJSON: () => unknown }).toJSON());
  }
  if (Array.isArray(value)) {
    const out = new Array(value.length);
    for (let i = 0; i < value.length; i++) out[i] = ordered(value[i]);
    return out;
  }
  const record = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(record).sort()) {
    const item = ordered(record[key]);
    // An own "__proto__" is data, not the copy's prototype.
    if (key === "__proto__") {
      Object.defineProperty(out, key, { value: item, enumerable: true, writable: true });
    } else out[key] = item;
  }
  return out;
}

/** A short, stable content hash: the first 8 bytes of the SHA-256 of `stableStringify`, in hex. */
export function contentHash(value: unknown): string {
  // node:crypto hashes synchronously: no promise and op round trip per child, per visit.
  return createHash("sha256").update(stableStringify(value) ?? "").digest("hex").slice(0, 16);
}

/**
 * True when every field of `desired` has the same value in `actual`. Extra fields in `actual`
 * (defaults the server filled in, fields other managers own) are ignored. Numbers and strings
 * compare by text, since quantities come back as strings (`2` → `"2"`); write quantities in
 * their canonical form (`"1"`, not `"1000m"`), or every resync will look like drift.
 */
export function isSubset(desired: unknown, actual: unknown): boolean {
  if (desired === null || desired === undefined) return actual === null || actual === undefined;
  if (Array.isArray(desired)) {
    if (!Array.isArray(actual) || actual.length !== desired.length) return false;
    for (let i = 0; i < desired.length; i++) if (!isSubset(desired[i], actual[i])) return false;
    return true;
  }
  if (typeof desired === "object") {
    if (!actual || typeof actual !== "object" || Array.isArray(actual)) return false;
    // Key by key, without a list of entries: it runs for every child at every visit.
    for (const key in desired) {
      if (!Object.hasOwn(desired, key)) continue;
      const want = (desired as Record<string, unknown>)[key];
      if (!isSubset(want, (actual as Record<string, unknown>)[key])) return false;
    }
    return true;
  }
  if (typeof desired === "number" || typeof actual === "number") {
    return String(desired) === String(actual);
  }
  return desired === actual;
}

/**
 * The first place (a dotted path) where `desired` is not a subset of `actual`, or undefined when
 * it is one: what a write would change.
 */
export function differingPath(desired: unknown, actual: unknown, path = ""): string | undefined {
  if (isSubset(desired, actual)) return undefined;
  if (desired && typeof desired === "object" && actual && typeof actual === "object") {
    if (Array.isArray(desired) !== Array.isArray(actual)) return path || ".";
    if (Array.isArray(desired) && desired.length !== (actual as unknown[]).length) {
      return path || ".";
    }
    for (const [key, value] of Object.entries(desired)) {
      const child = Array.isArray(desired) ? `${path}[${key}]` : path ? `${path}.${key}` : key;
      const found = differingPath(value, (actual as Record<string, unknown>)[key], child);
      if (found) return found;
    }
  }
  return path || ".";
}

/** The controller owner reference to `parent`. */
export function controllerReference(parent: KubeObject): NonNullable<
  NonNullable<KubeObject["metadata"]>["ownerReferences"]
>[number] {
  const meta = parent.metadata ?? {};
  if (!parent.apiVersion || !parent.kind || !meta.name || !meta.uid) {
    throw new TypeError("an owner needs apiVersion, kind, metadata.name and metadata.uid");
  }
  return {
    apiVersion: parent.apiVersion,
    kind: parent.kind,
    name: meta.name,
    uid: meta.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/**
 * The child as it will be applied: in the parent's namespace unless it names one, owned by the
 * parent, labelled with the plugin (and the runtime's `labels`, such as the parent's shard
 * bucket), and annotated with the hash of what the plugin asked for (under the operator's own
 * label and annotation names).
 */
export function stampChild<T extends KubeObject>(
  child: T,
  parent: KubeObject,
  plugin: string,
  operator: ChildStamp,
  labels: Record<string, string> = {},
): T & KubeObject {
  const meta = child.metadata ?? {};
  if (!meta.name) {
    throw new TypeError(`a ${child.kind ?? "child"} returned by ${plugin} has no metadata.name`);
  }
  const hash = contentHash(child);
  return {
    ...child,
    metadata: {
      ...meta,
      namespace: meta.namespace ?? parent.metadata?.namespace,
      labels: { ...meta.labels, ...labels, [operator.pluginLabel]: plugin },
      annotations: { ...meta.annotations, [operator.hashAnnotation]: hash },
      ownerReferences: [...(meta.ownerReferences ?? []), controllerReference(parent)],
    },
  };
}

/** True when applying `stamped` would change nothing we care about in `cached`. */
export function childUpToDate(
  stamped: KubeObject,
  cached: KubeObject | Unstructured | undefined,
  operator: ChildStamp,
): boolean {
  if (!cached) return false;
  const want = stamped.metadata?.annotations?.[operator.hashAnnotation];
  if (cached.metadata?.annotations?.[operator.hashAnnotation] !== want) return false;
  const { metadata: _, ...body } = stamped;
  const { metadata: stampedMeta } = stamped;
  return isSubset(body, cached) &&
    isSubset(stampedMeta?.labels, cached.metadata?.labels ?? {}) &&
    isSubset(stampedMeta?.annotations ?? {}, cached.metadata?.annotations ?? {}) &&
    (stampedMeta?.ownerReferences ?? []).every((ref) =>
      (cached.metadata?.ownerReferences ?? []).some((c) => isSubset(ref, c))
    );
}
