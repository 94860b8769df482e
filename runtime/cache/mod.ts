/**
 * The informer cache: one LIST+WATCH per kind shared by every plugin (per shard held, for kinds
 * that follow a ring's shards), stores indexed by owner, label selectors, and what is kept of
 * objects (the fields plugins declare they read) and dropped before they are stored.
 */
export * from "./cache_freshness.ts";
export * from "./informer.ts";
export * from "./informer_options.ts";
export * from "./informer_pool.ts";
export * from "./interner.ts";
export * from "./label_selector.ts";
export * from "./projection.ts";
export * from "./relevant_change.ts";
export * from "./slim.ts";
export * from "./stale_cache_error.ts";
export * from "./store.ts";
export * from "./strict_reads.ts";
