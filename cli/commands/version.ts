/** `version`: which build this is. */
import { defineCommand } from "../command.ts";
import { VERSION } from "../version.ts";

/** Prints the version (and Deno's). */
export const versionCommand = defineCommand({
  summary: "print the version",
  flags: {},
  run() {
    console.log(`ptemplate-operator ${VERSION} (deno ${Deno.version.deno})`);
    return Promise.resolve(0);
  },
});
