/** The shapes of Kubernetes objects as the client hands them out: typed metadata, the rest as sent. */
import type * as meta from "kubernetes-types/meta/v1.d.ts";
import type { Resource } from "./resource.ts";

/**
 * kubernetes-types' `ObjectMeta` (meta/v1): name, namespace, labels, owners and the server's
 * bookkeeping, documented in that package.
 * @ignore
 */
export type ObjectMeta = meta.ObjectMeta;

/** Any Kubernetes object: typed metadata, the rest as the server sent it (kubernetes-types fit). */
export interface KubeObject {
  /** `group/version`, or `v1` for the core group. */
  apiVersion?: string;
  /** The kind, e.g. `DaemonSet`. */
  kind?: string;
  /** Name, namespace, labels, owners and the server's bookkeeping. */
  metadata?: ObjectMeta;
}

/** An owner reference, as it appears in `metadata.ownerReferences`. */
export type OwnerReference = NonNullable<ObjectMeta["ownerReferences"]>[number];

/**
 * The metadata of an object the API server stores: it always has a name and a uid, and a namespace
 * exactly when its kind is namespaced (`Namespaced`; `boolean` when not known).
 */
export type StoredMeta<Namespaced extends boolean = boolean> =
  & ObjectMeta
  & { name: string; uid: string }
  & ([Namespaced] extends [true] ? { namespace: string }
    : [Namespaced] extends [false] ? { namespace?: undefined }
    : unknown);

/**
 * An object as it comes from the API server (the cache, a watch): what reconcile, finalize, a
 * watch's map and cache reads hand a plugin, so `pt.metadata.name` needs no `!`.
 */
export type Stored<T extends KubeObject, Namespaced extends boolean = boolean> = T & {
  metadata: StoredMeta<Namespaced>;
};

/** An object whose other fields are not typed; unknown fields are preserved through every verb. */
export interface Unstructured extends KubeObject {
  /** Every other field, as the server sent it. */
  [key: string]: unknown;
}

/** A list response: one page of items and the token for the next. */
export interface ObjectList<T> {
  /** `group/version` of the list. */
  apiVersion?: string;
  /** `<Kind>List`. */
  kind?: string;
  /** Where the list stands: its resourceVersion, and the token for the next page if any. */
  metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  /** The objects of this page. */
  items: T[];
}

/**
 * What the objects of a kind typed `T` are read as: `T`, or Unstructured for a kind that names no
 * type of its own (a `Resource` without one), so their other fields can still be read.
 */
export type ObjectOf<T extends KubeObject> = [keyof T] extends [keyof KubeObject] ? Unstructured
  : T;

/**
 * What the API server answers about objects of `R` (a `Resource`, or a union of them): stored
 * objects (named, with a uid, and a namespace for a namespaced kind) of its type, as `ObjectOf`
 * reads it.
 */
export type ObjectTypeOf<R> = R extends Resource<infer T, infer N> ? Stored<ObjectOf<T>, N>
  : never;
