/**
 * `check`: the stored objects of the enabled plugins' kinds that this version's rules would refuse
 * if they were written anew, each with the field and why. Read-only; run it before an upgrade
 * (it judges by this binary's rules, installed or not) and after.
 */
import { preflight } from "../../kube/mod.ts";
import { defineCommand } from "../command/command.ts";
import { connect } from "../command/connect.ts";
import { CHECK } from "../command/flag_table.ts";
import { crdsOf } from "../plugin_loading/plugin_catalog.ts";
import { refusalsSummary, storedRefusals } from "../refusals/stored_refusals.ts";

/** Prints each finding and a summary per kind; exits 1 when any stored object breaks a rule. */
export const checkCommand = defineCommand({
  summary: "list stored objects that break this version's rules (read-only; exit 1 if any)",
  flags: CHECK,
  async run(values, { catalog, operator }) {
    const crds = crdsOf(await catalog(values));
    const client = await connect(values, operator);
    let breaking = 0;
    try {
      await preflight(client);
      for (const crd of crds) {
        const found = await storedRefusals(client, crd);
        for (const line of found.lines) console.log(line);
        console.log(refusalsSummary(found));
        breaking += found.breaking;
      }
    } finally {
      client.close();
    }
    return breaking ? 1 : 0;
  },
});
