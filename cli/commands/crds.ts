/** `crds`: the CRDs of the enabled plugins, as YAML to review or apply. */
import { stringify } from "yaml";
import { defineCommand } from "../command.ts";
import { PLUGINS } from "../flag_table.ts";
import { crdsOf } from "../plugin_catalog.ts";

/** Prints the CRDs, one YAML document each; with none to print, says why and exits 1. */
export const crdsCommand = defineCommand({
  summary: "print the CRDs of the enabled plugins as YAML",
  flags: PLUGINS,
  async run(values, { catalog }) {
    const entries = await catalog(values);
    const crds = crdsOf(entries);
    if (!crds.length) {
      console.error(
        `crds: nothing to print: the enabled plugins (${
          entries.map((e) => e.plugin.name).join(", ")
        }) bring no CRD. A plugin for a kind of its own must export the kind's CRD beside it ` +
          "(customResourceDefinition(...)), or the module's catalog entry must list it; one for " +
          "built-in kinds needs none",
      );
      return 1;
    }
    console.log(
      crds.map((crd) => stringify(crd, { lineWidth: 0, aliasDuplicateObjects: false }))
        .join("---\n"),
    );
    return 0;
  },
});
