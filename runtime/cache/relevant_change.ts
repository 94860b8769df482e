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
  return (old, object) =>
    metadataChanged(old.metadata, object.metadata) ||
    !equal(bodyOf(view(old)), bodyOf(view(object)));
}

type Metadata = KubeObject["metadata"];

function metadataChanged(a: Metadata, b: Metadata): boolean {
  if (a === b) return false;
  if (!a || !b) return true;
  return a.uid !== b.uid || a.generation !== b.generation ||
    a.deletionTimestamp !== b.deletionTimestamp ||
    !equal(a.labels, b.labels) || !equal(a.annotations, b.annotations) ||
    !equal(a.finalizers, b.finalizers) || !equal(a.ownerReferences, b.ownerReferences) ||
    !equal(fieldManagers(a), fieldManagers(b));
}

/** The managed field entries not written through a subresource, without their times. */
function fieldManagers(meta: NonNullable<Metadata>): unknown[] {
  return (meta.managedFields ?? []).filter((entry) => !entry.subresource).map((entry) => {
    const { time: _, ...rest } = entry;
    return rest;
  });
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
    return a.length === other.length && a.every((item, i) => equal(item, other[i]));
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const keys = new Set([...Object.keys(x), ...Object.keys(y)]);
  for (const key of keys) if (!equal(x[key], y[key])) return false;
  return true;
}

function isEmpty(value: unknown): boolean {
  return value === undefined || value === null ||
    (typeof value === "object" && Object.keys(value).length === 0);
}
