/**
 * One object's identity, as kube-rs's `ObjectRef`: its kind (with the API group), namespace for a
 * namespaced kind, name, and uid when known. Built from an object of a resource, or from an owner
 * reference; `refKey` is the one string form every map kept by object uses (the cache, the work
 * queues, the applier's children, the write-loop guard, child problems, finalizer bookkeeping).
 */
import type { KubeObject, OwnerReference } from "./object.ts";
import type { Resource } from "./resource.ts";

/** An object's identity. Two refs name the same object when their keys are equal. */
export interface ObjectRef {
  /** The API group; "" for the core group. Versions do not change identity. */
  group: string;
  /** The kind, e.g. `DaemonSet`. */
  kind: string;
  /** Absent for a cluster-scoped kind. */
  namespace?: string;
  /** The object's name. */
  name: string;
  /** The object's uid, when known: a namesake made later is another object with the same key. */
  uid?: string;
}

/** A kind's place in an `ObjectRef`: its group, kind and scope (a `Resource` is one). */
export type KindOf = Pick<Resource, "group" | "kind" | "namespaced">;

/**
 * The ref of `object`, an object of `resource` (its kind and group come from the resource, so a
 * list item without `kind` has one too). A namespace is kept only for a namespaced kind.
 *
 * @example The parent a child must be controlled by, for `ownershipOf`.
 * ```ts
 * import { DAEMON_SET, objectRef } from "ptemplate-operator/mod.ts";
 *
 * const ds = { metadata: { name: "web", namespace: "demo", uid: "u-1" } };
 * const ref = objectRef(DAEMON_SET, ds);
 * if (ref.kind !== "DaemonSet" || ref.group !== "apps" || ref.uid !== "u-1") throw new Error("ref");
 * ```
 */
export function objectRef(resource: KindOf, object: KubeObject): ObjectRef {
  const { namespace, name, uid } = object.metadata ?? {};
  return refTo(resource, { namespace, name: name ?? "", uid });
}

/**
 * The ref of the object of `resource` named `name` (in `namespace`, for a namespaced kind).
 *
 * @example
 * ```ts
 * import { NODE, refTo } from "ptemplate-operator/kube/mod.ts";
 *
 * // A cluster-scoped kind keeps no namespace.
 * if (refTo(NODE, { namespace: "x", name: "worker-1" }).namespace) throw new Error("none");
 * ```
 */
export function refTo(
  resource: KindOf,
  at: { namespace?: string; name: string; uid?: string },
): ObjectRef {
  const ref: ObjectRef = { group: resource.group, kind: resource.kind, name: at.name };
  if (resource.namespaced && at.namespace) ref.namespace = at.namespace;
  if (at.uid) ref.uid = at.uid;
  return ref;
}

/**
 * The object an owner reference names. An owner lives in its dependent's namespace or is
 * cluster-scoped; the reference does not say which, so pass `namespace` when the owner's kind is
 * namespaced.
 */
export function ownerRefOf(owner: OwnerReference, namespace?: string): ObjectRef {
  const slash = owner.apiVersion.indexOf("/");
  const ref: ObjectRef = {
    group: slash < 0 ? "" : owner.apiVersion.slice(0, slash),
    kind: owner.kind,
    name: owner.name,
    uid: owner.uid,
  };
  if (namespace) ref.namespace = namespace;
  return ref;
}

/**
 * The one key of an object: `Kind.group/namespace/name`, or `Kind.group/name` for a
 * cluster-scoped kind (`Kind/…` for the core group): `DaemonSet.apps/demo/pt-consumer`,
 * `Node/worker-1`. Names, namespaces and groups hold no `/`, so the key splits back (`parseRefKey`).
 * The uid is not part of it.
 */
export function refKey(ref: ObjectRef): string {
  const kind = ref.group ? `${ref.kind}.${ref.group}` : ref.kind;
  return ref.namespace ? `${kind}/${ref.namespace}/${ref.name}` : `${kind}/${ref.name}`;
}

/** A key back into its ref (without a uid); throws on a string that is not a key. */
export function parseRefKey(key: string): ObjectRef {
  const parts = key.split("/");
  if (parts.length < 2 || parts.length > 3 || parts.some((p) => !p)) {
    throw new TypeError(`"${key}" is not an object key (Kind.group/namespace/name)`);
  }
  const [kindGroup, ...rest] = parts;
  const dot = kindGroup.indexOf(".");
  const ref: ObjectRef = {
    group: dot < 0 ? "" : kindGroup.slice(dot + 1),
    kind: dot < 0 ? kindGroup : kindGroup.slice(0, dot),
    name: rest[rest.length - 1],
  };
  if (rest.length === 2) ref.namespace = rest[0];
  return ref;
}

/** True when both refs name the same object: by uid when both know it, else by key. */
export function sameObject(a: ObjectRef, b: ObjectRef): boolean {
  if (a.uid && b.uid) return a.uid === b.uid;
  return refKey(a) === refKey(b);
}

/** How people read a ref in messages: `DaemonSet demo/pt-consumer`, `Node worker-1`. */
export function describeRef(ref: ObjectRef): string {
  return `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ""}${ref.name}`;
}
