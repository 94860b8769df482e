/**
 * Writes the reference pages under docs/reference/ from the sources (`deno task docs`): the
 * command line's flags, the metrics, the Ptemplate's fields. reference_pages_test.ts fails while a
 * committed page differs from what this makes now.
 */
import { ptemplatePage } from "./crd_reference.ts";
import { flagsPage } from "./flag_reference.ts";
import { GENERATE_COMMAND } from "./markdown.ts";
import { metricsPage } from "./metric_reference.ts";

/** Each page, by its file name under docs/reference/. */
export const PAGES: Record<string, () => string | Promise<string>> = {
  "flags.md": () => flagsPage(),
  "metrics.md": () => metricsPage(),
  "ptemplate.md": () => ptemplatePage(),
};

/** Where the pages go. */
export const REFERENCE_DIR = new URL("./", import.meta.url);

if (import.meta.main) {
  for (const [file, page] of Object.entries(PAGES)) {
    await Deno.writeTextFile(new URL(file, REFERENCE_DIR), await page());
    console.log(`wrote docs/reference/${file}`);
  }
  console.log(`(${GENERATE_COMMAND} writes them again after a change to their sources)`);
}
