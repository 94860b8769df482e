/** The built-in Ptemplate plugins as one list, in registration order. */
import { consumerDaemonSetPlugin } from "./consumer_daemonset.ts";
import { kmmModulePlugin } from "./kmm_module_plugin.ts";
import { statusAggregatorPlugin } from "./status_aggregator.ts";

export const PTEMPLATE_PLUGINS = [kmmModulePlugin, consumerDaemonSetPlugin, statusAggregatorPlugin];
