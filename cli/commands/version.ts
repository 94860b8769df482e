/** `version`: which build this is. */
import { PLUGIN_API_VERSION } from "../../runtime/mod.ts";
import { defineCommand } from "../command/command.ts";

/** Prints the version, the plugin API version it serves (what `--plugin` modules may declare), and Deno's. */
export const versionCommand = defineCommand({
  summary: "print the version",
  flags: {},
  run(_values, { operator }) {
    console.log(
      `${operator.name} ${operator.version} (plugin API ${PLUGIN_API_VERSION}, ` +
        `deno ${Deno.version.deno})`,
    );
    return Promise.resolve(0);
  },
});
