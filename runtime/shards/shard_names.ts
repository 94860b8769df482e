/**
 * The names a ring of shards gives its objects, under the operator's own object domain (see
 * OperatorIdentity), so that two operators' rings in one cluster never mix.
 */
import type { OperatorIdentity } from "../identity/mod.ts";

/** What a ring names: on its Leases, and on the children of its parents. */
export interface ShardNames {
  /**
   * Label on every child when replicas split the keys (`--shards`): its parent's bucket (two hex
   * digits, the top byte of the hash of the parent's uid), by which each replica asks the API
   * server for its shards' children.
   */
  bucketLabel: string;
  /** Label on every Lease of a ring: the ring's name. */
  ringLabel: string;
  /** Annotation on every Lease of a ring: its size, N, which every replica must agree on. */
  countAnnotation: string;
}

/** The ring's names for `operator`. */
export function shardNames(operator: OperatorIdentity): ShardNames {
  return {
    bucketLabel: `${operator.objectDomain}/shard-bucket`,
    ringLabel: `${operator.objectDomain}/shard-ring`,
    countAnnotation: `${operator.objectDomain}/shards`,
  };
}
