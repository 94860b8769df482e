/** The shapes of Kubernetes objects as the client hands them out: typed metadata, the rest as sent. */
import type { ObjectMeta } from "kubernetes-types/meta/v1.d.ts";
import type { Resource } from "./resource.ts";

export type { ObjectMeta };

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

/** An object whose other fields are not typed; unknown fields are preserved through every verb. */
export interface Unstructured extends KubeObject {
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

/** The type of the objects `R` (a `Resource`, or a union of them) addresses, as `ObjectOf` reads it. */
export type ObjectTypeOf<R> = R extends Resource<infer T> ? ObjectOf<T> : never;
