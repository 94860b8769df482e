/**
 * The ptemplate-operator command line: run the operator, print or install its CRDs and RBAC,
 * write its OLM bundle, say its version. The commands are cli/commands/, their flags
 * cli/command/flag_table.ts, and the dispatch cli/operator.ts, which own binaries call too.
 */
import { type OperatorOptions, runOperator } from "./cli/operator.ts";
import type { CatalogEntry } from "./cli/plugin_loading/plugin_catalog.ts";
import { VERSION } from "./cli/release/version.ts";

export { VERSION };
export type { CatalogEntry, OperatorOptions };

/**
 * Runs the command line and returns the exit code: `runOperator` (cli/operator.ts), which an own
 * binary may call as well, with its own `catalog`.
 */
export function main(argv: string[], options: OperatorOptions = {}): Promise<number> {
  return runOperator(argv, options);
}

// No top-level await: a `--plugin` module may import this module (for `main`, `VERSION`), and
// its import would wait for this module's evaluation, which would wait for the plugin: a cycle.
if (import.meta.main) main(Deno.args).then((code) => Deno.exit(code));
