/** `version`: which build this is. */
import { defineCommand } from "../command.ts";

/** Prints the version (and Deno's). */
export const versionCommand = defineCommand({
  summary: "print the version",
  flags: {},
  run(_values, { operator }) {
    console.log(`${operator.name} ${operator.version} (deno ${Deno.version.deno})`);
    return Promise.resolve(0);
  },
});
