/**
 * Pure decisions about desired objects: how a child is stamped (owner reference, labels, hash)
 * and whether the cached object already matches, so that a converged operator writes nothing.
 */
import type { KubeObject, Unstructured } from "../../kube/object.ts";
import type { OperatorIdentity } from "../identity/mod.ts";

/** The operator's own names a stamped child carries. */
export type ChildStamp = Pick<OperatorIdentity, "pluginLabel" | "hashAnnotation">;

/** JSON with object keys sorted, so equal values give equal strings. */
export function stableStringify(value: unknown): string {
  return JSON.stringify(
    value,
    (_, v) =>
      v && typeof v === "object" && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
        : v,
  );
}

/** A short, stable content hash. */
export async function contentHash(value: unknown): Promise<string> {
  const bytes = new TextEncoder().encode(stableStringify(value));
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return [...digest.slice(0, 8)].map((b) => b.toString(16).padStart(2, "0")).join("");
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
    return Array.isArray(actual) && actual.length === desired.length &&
      desired.every((d, i) => isSubset(d, actual[i]));
  }
  if (typeof desired === "object") {
    if (!actual || typeof actual !== "object" || Array.isArray(actual)) return false;
    return Object.entries(desired).every(([k, v]) =>
      isSubset(v, (actual as Record<string, unknown>)[k])
    );
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
export async function stampChild<T extends KubeObject>(
  child: T,
  parent: KubeObject,
  plugin: string,
  operator: ChildStamp,
  labels: Record<string, string> = {},
): Promise<T & KubeObject> {
  const meta = child.metadata ?? {};
  if (!meta.name) {
    throw new TypeError(`a ${child.kind ?? "child"} returned by ${plugin} has no metadata.name`);
  }
  const hash = await contentHash(child);
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
