/** `scorecard`: operator-sdk's best-practice checks, on a bundle folder or the one `bundle` would write. */
import { defineCommand } from "../command/command.ts";
import { SCORECARD } from "../command/flag_table.ts";
import type { BundleFile } from "../olm/olm_bundle.ts";
import { bundleChecks } from "../olm/olm_checks.ts";
import { bundleFor } from "./bundle.ts";

/** Prints each check as pass or FAIL with its problems; exits 1 when one fails. */
export const scorecardCommand = defineCommand({
  summary: "run operator-sdk's best-practice checks on the OLM bundle; exits 1 on a failure",
  flags: SCORECARD,
  async run(values, { catalog, operator }) {
    const files = values.bundle
      ? await readBundle(values.bundle)
      : await bundleFor(values, await catalog(values), operator);
    const results = bundleChecks(files);
    for (const { check, problems } of results) {
      console.log(`${problems.length ? "FAIL" : "pass"}  ${check}`);
      for (const problem of problems) console.log(`      ${problem}`);
    }
    return results.some((r) => r.problems.length) ? 1 : 0;
  },
});

/** A bundle folder as written (`manifests/`, `metadata/`), for the checks. */
async function readBundle(dir: string): Promise<BundleFile[]> {
  const files: BundleFile[] = [];
  for (const folder of ["manifests", "metadata"]) {
    for await (const entry of Deno.readDir(`${dir}/${folder}`)) {
      if (!entry.isFile) continue;
      const text = await Deno.readTextFile(`${dir}/${folder}/${entry.name}`);
      files.push({ path: `bundle/${folder}/${entry.name}`, text });
    }
  }
  return files;
}
