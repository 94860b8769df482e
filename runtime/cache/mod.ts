/**
 * The informer cache: one LIST+WATCH per kind shared by every plugin, stores indexed by owner,
 * label selectors, and what is dropped from objects before they are kept.
 */
export * from "./informer.ts";
export * from "./informer_pool.ts";
export * from "./label_selector.ts";
export * from "./slim.ts";
export * from "./store.ts";
