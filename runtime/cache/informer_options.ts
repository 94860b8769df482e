/** What an informer is told: where to look, what to keep, and which part of a kind is its own. */
import type { KubeObject } from "../../kube/object.ts";
import type { Logger, WarningThrottle } from "../observe/mod.ts";
import type { Interner } from "./interner.ts";
import type { Projector } from "./projection.ts";
import type { SlimOptions } from "./slim.ts";
import type { StoreChange } from "./store.ts";

/**
 * What an informer watches and how: its scope, its timings, what its cache keeps of each object,
 * and which part of a kind is its own.
 */
export interface InformerOptions {
  /** Only this namespace; all namespaces when absent. */
  namespace?: string;
  /** Page size of the initial list and relists. */
  pageSize?: number;
  /**
   * A watch that delivers nothing (not even a bookmark, which the API server sends about once a
   * minute) for this long is treated as dead: its cache is behind, and it lists again; default 3
   * minutes. Too small costs a relist now and then; too large leaves a watch that died on a live
   * connection unnoticed by that much (a dead connection is noticed within seconds, see
   * kube/connection_health.ts).
   */
  silenceTimeoutMs?: number;
  /**
   * How often to look again for a kind that is not served (its CRD missing, or deleted while
   * running); default 2 s: a CRD that comes back is in use within about that long. Each look is
   * one small LIST that the API server answers 404.
   */
  missingKindRetryMs?: number;
  /** Where its warnings go, unless `warnings` is shared. */
  log: Logger;
  /** Shared by all informers, so an outage is one warning per cause, not one per kind and retry. */
  warnings?: WarningThrottle;
  /** Never list or watch: the kind is not available here (see Watch.optional); its cache is empty. */
  skipped?: boolean;
  /** The plugins work without it: a 403 makes it unavailable (like a missing CRD), not stuck. */
  optional?: boolean;
  /** What the cache drops of each object's metadata (see slim.ts). */
  slim?: SlimOptions;
  /**
   * What the cache keeps of each object's body (see projection.ts); all when absent. When it
   * keeps nothing, the server is asked for metadata alone.
   */
  projector?: Projector;
  /** Shares what the cached objects have in common (see interner.ts); one per pool. */
  interner?: Interner;
  /**
   * The part of the kind this cache holds, when it is one of several (a kind split by the shards
   * of a ring, see InformerPool): what to ask the server for besides the resource's own selectors
   * (asked again at each list and watch), which objects to keep of what arrives (the same test, or
   * a finer one), and the shard it belongs to.
   */
  part?: CachePart;
}

/** One part of a kind's objects; see InformerOptions.part. */
export interface CachePart {
  /** The shard whose objects these are; undefined for a part every shard reads. */
  shard?: number;
  /** Parameters of each list and watch: a shard selector, a label selector added to the kind's. */
  query?: () => { shardSelector?: string; labelSelector?: string };
  /** Whether to keep an object that arrives (a list item, a watch event, our write's answer). */
  keeps: (object: KubeObject) => boolean;
  /**
   * Starts empty and idle (synced, fresh: rightly empty) until `resume`: the part of a shard this
   * replica does not hold yet.
   */
  idle?: boolean;
}

/** Told of each change to an informer's cache once the store holds it; a throw is logged. */
export type ChangeHandler<T> = (change: StoreChange<T>) => void;
