/**
 * Whether an update changed anything a plugin can see of an object: the fields it declared it
 * reads, and the metadata the runtime acts on. A DaemonSet's status written by its controller,
 * or a parent's status written by another plugin, is then no reason to visit a plugin that reads
 * neither; with many parents that is most of the events a cache takes in.
 *
 * The metadata compared is what decides ownership, drift and deletion: generation, labels,
 * annotations, finalizers, owner references, the deletion timestamp, and who manages which fields
 * outside subresources (a hand edit of a field we set moves it to the editor's set, and changes
 * the generation of any kind that keeps one). The times in `managedFields` are not compared: they
 * move with every write of a status.
 */
import type { KubeObject } from "../../kube/object.ts";
import { projector } from "./projection.ts";

/** A test of an update (`old` to `object`): true when a reader of `fields` could tell them apart. */
export type RelevantChange = (old: KubeObject, object: KubeObject) => boolean;

/** The test for a reader of `fields` (dotted paths, as in `reads`); undefined reads everything. */
export function relevantChange(fields: readonly string[] | undefined): RelevantChange {
  if (!fields) return () => true;
  const view = projector({ fields });
  // Where both versions hold the very same value at every field read from, there is nothing to
  // compare (the cache keeps what a new version has equal with the one it replaces).
  const tops = [...new Set(fields.map((field) => field.split(/[.[]/, 1)[0]))];
  const sameTops = (a: KubeObject, b: KubeObject) => {
    const x = a as Record<string, unknown>;
    const y = b as Record<string, unknown>;
    return tops.every((top) => x[top] === y[top]);
  };
  return (old, object) =>
    metadataChanged(old.metadata, object.metadata) ||
    (!sameTops(old, object) && !equal(bodyOf(view(old)), bodyOf(view(object))));
}

type Metadata = KubeObject["metadata"];

function metadataChanged(a: Metadata, b: Metadata): boolean {
  if (a === b) return false;
  if (!a || !b) return true;
  return a.uid !== b.uid || a.generation !== b.generation ||
    a.deletionTimestamp !== b.deletionTimestamp ||
    !equal(a.labels, b.labels) || !equal(a.annotations, b.annotations) ||
    !equal(a.finalizers, b.finalizers) || !equal(a.ownerReferences, b.ownerReferences) ||
    !sameFieldManagers(a.managedFields ?? [], b.managedFields ?? []);
}

type ManagedFields = NonNullable<NonNullable<Metadata>["managedFields"]>;

/**
 * Whether the managed field entries not written through a subresource are the same, their times
 * aside: compared in step, without copies (it runs for every event and reader).
 */
function sameFieldManagers(a: ManagedFields, b: ManagedFields): boolean {
  if (a === b) return true;
  let i = 0;
  let j = 0;
  for (;;) {
    while (i < a.length && a[i].subresource) i++;
    while (j < b.length && b[j].subresource) j++;
    if (i === a.length || j === b.length) return i === a.length && j === b.length;
    if (!equalObjects(a[i], b[j], "time")) return false;
    i++;
    j++;
  }
}

function bodyOf(object: KubeObject): Record<string, unknown> {
  const { metadata: _, apiVersion: _v, kind: _k, ...body } = object as Record<string, unknown>;
  return body;
}

/** Deep equality of JSON values; the order of an object's keys does not matter. */
export function equal(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") {
    // An absent map and an empty one read the same.
    return isEmpty(a) && isEmpty(b);
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    if (a.length !== other.length) return false;
    for (let i = 0; i < a.length; i++) if (!equal(a[i], other[i])) return false;
    return true;
  }
  return equalObjects(a, b);
}

/** Deep equality of two objects, key by key (`skip` aside), without listing their keys. */
function equalObjects(a: object, b: object, skip?: string): boolean {
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  for (const key in x) {
    if (key !== skip && Object.hasOwn(x, key) && !equal(x[key], y[key])) return false;
  }
  for (const key in y) {
    if (
      key !== skip && Object.hasOwn(y, key) && !Object.hasOwn(x, key) && !equal(undefined, y[key])
    ) {
      return false;
    }
  }
  return true;
}

function isEmpty(value: unknown): boolean {
  return value === undefined || value === null ||
    (typeof value === "object" && Object.keys(value).length === 0);
}
