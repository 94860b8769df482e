/** `crds`: the CRDs of the enabled plugins, as YAML to review or apply. */
import { stringify } from "yaml";
import { defineCommand } from "../command.ts";
import { PLUGINS } from "../flag_table.ts";
import { crdsOf } from "../plugin_catalog.ts";

/** Prints the CRDs, one YAML document each. */
export const crdsCommand = defineCommand({
  summary: "print the CRDs of the enabled plugins as YAML",
  flags: PLUGINS,
  async run(values, { catalog }) {
    const crds = crdsOf(await catalog(values));
    console.log(
      crds.map((crd) => stringify(crd, { lineWidth: 0, aliasDuplicateObjects: false }))
        .join("---\n"),
    );
    return 0;
  },
});
