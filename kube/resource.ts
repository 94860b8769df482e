/** Describes an API resource (group, version, kind, plural, scope) and the URL paths that reach it. */
import type { KubeObject } from "./object.ts";

/**
 * Everything the client needs to address one kind; built-ins are in `kinds.ts`. `T` is the type
 * of its objects: `cache(PTEMPLATE)` reads `Ptemplate`s, a plugin `for: PTEMPLATE` reconciles them.
 * `Namespaced` is its scope as a type (`true` for a namespaced kind), so that its stored objects
 * have a `metadata.namespace` to read (`Stored`); a `Resource<T>` leaves it open.
 */
export interface Resource<T extends KubeObject = KubeObject, Namespaced extends boolean = boolean> {
  /** "" for the core group. */
  group: string;
  /** The version the client reads and writes, e.g. `v1`. */
  version: string;
  /** The kind, e.g. `DaemonSet`. */
  kind: string;
  /** The lower-case plural used in URLs, e.g. `daemonsets`. */
  plural: string;
  /** True for a namespaced kind, false for a cluster-scoped one. */
  namespaced: Namespaced;
  /**
   * Only objects with these labels (a label selector): a narrower view of the kind, cached and
   * watched on its own, e.g. the pods of one's own DaemonSets rather than every pod.
   */
  labelSelector?: string;
  /** Only objects with these fields (a field selector), e.g. Events of one reason. */
  fieldSelector?: string;
  /** Never set: it carries `T`, the type of the kind's objects, for the compiler. */
  readonly objectType?: T;
}

/**
 * A narrower view of `resource`: the same kind, only the objects the selectors match.
 *
 * @example Cache only the pods one's DaemonSets make, not every pod in the cluster.
 * ```ts
 * import { POD, scoped } from "ptemplate-operator/mod.ts";
 *
 * const CONSUMER_PODS = scoped(POD, { labelSelector: "example.com/owner" });
 * if (CONSUMER_PODS.kind !== "Pod") throw new Error("same kind");
 * ```
 */
export function scoped<T extends KubeObject, N extends boolean>(
  resource: Resource<T, N>,
  selectors: { labelSelector?: string; fieldSelector?: string },
): Resource<T, N> {
  return { ...resource, ...selectors };
}

/** `apps/v1`, or `v1` for the core group. */
export function apiVersionOf(resource: Resource): string {
  return resource.group ? `${resource.group}/${resource.version}` : resource.version;
}

/** Where to send a request for a resource, an object, or one of its subresources. */
export interface PathOptions {
  /** The object's namespace (none: every namespace, for a list or a watch). */
  namespace?: string;
  /** The object's name (none: the collection). */
  name?: string;
  /** e.g. `status`. */
  subresource?: string;
}

/**
 * The URL path for `resource`. A namespaced resource without a namespace addresses all
 * namespaces (list and watch only); a cluster-scoped one ignores `namespace` being absent.
 */
export function resourcePath(resource: Resource, options: PathOptions = {}): string {
  const base = resource.group
    ? `/apis/${resource.group}/${resource.version}`
    : `/api/${resource.version}`;
  let path = base;
  if (resource.namespaced && options.namespace) {
    path += `/namespaces/${encodeURIComponent(options.namespace)}`;
  } else if (!resource.namespaced && options.namespace) {
    throw new TypeError(
      `${resource.kind} is cluster-scoped: do not pass a namespace (got "${options.namespace}")`,
    );
  }
  path += `/${resource.plural}`;
  if (options.name !== undefined) {
    if (!options.name) throw new TypeError(`${resource.kind}: name must not be empty`);
    path += `/${encodeURIComponent(options.name)}`;
  }
  if (options.subresource) {
    if (options.name === undefined) {
      throw new TypeError(`${resource.kind}: subresource "${options.subresource}" needs a name`);
    }
    path += `/${options.subresource}`;
  }
  return path;
}
