/**
 * Sharding: the replicas split every plugin's keys by a stable hash of the parent's uid, one
 * fenced Lease per shard, each replica holding a balanced, sticky share (see shard_ring.ts).
 */
export * from "./assignment.ts";
export * from "./shard_ring.ts";
export * from "./shard_names.ts";
export type { ShardClaim } from "./shard_slot.ts";
