/**
 * A plugin shipped to the operator's pods without building a binary (deploy/plugin): it counts the
 * keys of ConfigMaps labelled `example.ptemplate.dev/count-keys=true` as a metric, and writes
 * nothing. One file that imports only the binary's API, so it needs no bundling.
 */
import { CONFIG_MAP, definePlugin } from "ptemplate-operator/mod.ts";

const LABEL = "example.ptemplate.dev/count-keys";
const HELP = `Keys of each ConfigMap labelled ${LABEL}=true`;

export const keyCounterPlugin = definePlugin({
  name: "key-counter",
  for: CONFIG_MAP,
  writesStatus: false,
  pluginApi: "1.0",
  filter: (change) => change.object.metadata.labels?.[LABEL] === "true",
  reconcile(configMap, { metrics }) {
    const { namespace, name } = configMap.metadata;
    metrics.gauge("key_counter_keys", HELP, ["namespace", "name"])
      .set({ namespace, name }, Object.keys(configMap.data ?? {}).length);
  },
  onDeleted({ namespace = "", name }, { metrics }) {
    metrics.gauge("key_counter_keys", HELP, ["namespace", "name"]).remove({ namespace, name });
  },
});
