/** The built-in Ptemplate plugins. */
export * from "./consumer_daemonset.ts";
export * from "./kmm_module_plugin.ts";
export * from "./ptemplate_admission.ts";
export * from "./ptemplate_plugins.ts";
export * from "./status_aggregator.ts";
