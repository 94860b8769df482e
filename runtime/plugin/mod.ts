/**
 * The plugin API: what a plugin declares, what its reconcile returns, what it may throw, and the
 * status conditions it reports.
 */
export * from "./admission.ts";
export * from "./conditions.ts";
export * from "./declared.ts";
export * from "./field_path.ts";
export * from "./plugin.ts";
export * from "./plugin_api_version.ts";
export * from "./plugin_errors.ts";
export * from "./watches.ts";
