/**
 * The names a ring of shards gives its objects, under the operator's own object domain
 * (`OperatorIdentity.objectDomain`), so that two operators' rings in one cluster never mix.
 */
import { fnv1a64Hex } from "../../kube/shard_range.ts";

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

/** The ring's names under `objectDomain` (an operator's, where its labels live). */
export function shardNames(objectDomain: string): ShardNames {
  return {
    bucketLabel: `${objectDomain}/shard-bucket`,
    ringLabel: `${objectDomain}/shard-ring`,
    countAnnotation: `${objectDomain}/shards`,
  };
}

/**
 * The value of `ringLabel` on a ring's Leases: its name, or the name's hash where the name is not
 * a valid label value (longer than 63 characters).
 */
export function ringLabelValue(ring: string): string {
  return /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/.test(ring) ? ring : fnv1a64Hex(ring);
}

/**
 * What the name of each shard's Lease of ring `ring` begins with (`<ring>-shard-<i>`): the ring
 * takes and sweeps them by it, and the API server's shard fence reads the shard from it.
 */
export function shardLeasePrefix(ring: string): string {
  return `${ring}-shard-`;
}
