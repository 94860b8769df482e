/** What a plugin watches besides its own kind, and which fields of a kind it reads. */
import type { KubeObject, Stored } from "../../kube/object.ts";
import type { Resource } from "../../kube/resource.ts";
import type { CacheReader, StoreChange } from "../cache/mod.ts";
import type { NamespacedName } from "./plugin.ts";

/**
 * Another kind whose changes should reconcile some objects of the plugin's kind. Write it with
 * `watch(resource, { map })`, so that `map` and `filter` see the watched kind's type.
 */
export interface Watch<W extends KubeObject = KubeObject, N extends boolean = boolean> {
  /** The kind watched. */
  resource: Resource<W, N>;
  /** Which objects of the plugin's kind a change of `object` concerns (may read the cache). */
  map(object: Stored<W, N>, context: MapContext): NamespacedName[];
  /** Only changes that pass (e.g. a field the plugin reads changed); default all. */
  filter?(change: StoreChange<Stored<W, N>>): boolean;
  /**
   * The plugin works without this kind (it reports less). A cluster-scoped optional kind is not
   * watched when the operator is restricted to namespaces, where Roles cannot grant it; then
   * `installed()` says false for it and its cache is empty.
   */
  optional?: boolean;
  /**
   * When replicas split the keys (`--shards`): the uid of the object of the plugin's kind that
   * `object` belongs to (a consumer pod's Ptemplate, by a label holding its uid), so that each
   * replica caches only its own shards' objects of this kind. Undefined for an object that
   * belongs to none: every replica keeps those. Without it every replica caches the whole kind
   * (right for Nodes, which every shard reads). Filtered as objects arrive: each replica still
   * receives them all.
   */
  shardKey?(object: Stored<W, N>): string | undefined;
}

/**
 * The fields of one kind a plugin reads, besides metadata (always kept): see `PluginSpec.reads`.
 * Write it with `reads(resource, fields)`.
 */
export interface Reads {
  /** The kind (the same `Resource` the plugin names in `for`, `owns` or `watches`). */
  resource: Resource;
  /**
   * Dotted paths, each kept whole: `status`, `spec.nodeName`, `spec.containers[*].image` (`[*]`
   * for every item of a list). Empty: metadata alone (the API server then sends nothing more).
   */
  fields: string[];
}

/**
 * What a plugin reads of a kind besides metadata.
 *
 * @example A plugin that reads only the names of Pods: their cache holds metadata alone.
 * ```ts
 * import { POD, reads } from "ptemplate-operator/mod.ts";
 *
 * const podNames = reads(POD, []);
 * const podPhase = reads(POD, ["status.phase", "spec.nodeName"]);
 * if (podNames.fields.length || podPhase.resource !== POD) throw new Error("declared");
 * ```
 */
export function reads(resource: Resource, fields: string[]): Reads {
  return { resource, fields };
}

/** What `Watch.map` may use. */
export interface MapContext {
  /** Cached objects of a kind, typed by its `Resource`. */
  cache<R extends KubeObject, N extends boolean>(resource: Resource<R, N>): CacheReader<R, N>;
}

/**
 * A watch whose `map` and `filter` see objects of the watched kind, typed by its resource.
 *
 * @example Reconcile the Greeting a ConfigMap's label names.
 * ```ts
 * import { CONFIG_MAP, watch } from "ptemplate-operator/mod.ts";
 *
 * const byLabel = watch(CONFIG_MAP, {
 *   // `cm` is a ConfigMap as stored: its metadata has a name and a namespace.
 *   map: (cm) => {
 *     const greeting = cm.metadata.labels?.["example.com/greeting"];
 *     return greeting ? [{ namespace: cm.metadata.namespace, name: greeting }] : [];
 *   },
 *   filter: (change) => change.type !== "updated" || change.object.data !== change.old.data,
 * });
 * if (byLabel.resource !== CONFIG_MAP) throw new Error("watches ConfigMaps");
 * ```
 */
export function watch<W extends KubeObject, N extends boolean>(
  resource: Resource<W, N>,
  options: Omit<Watch<W, N>, "resource">,
): Watch<W, N> {
  return { resource, ...options };
}
