/** `bundle`: the OLM bundle, bundle.Dockerfile and file-based catalog, written to disk. */
import { defineCommand } from "../command.ts";
import { BUNDLE } from "../flag_table.ts";
import type { FlagValuesOf } from "../flags.ts";
import { type BundleFile, olmBundle } from "../olm_bundle.ts";
import type { CatalogEntry } from "../plugin_catalog.ts";
import { type OperatorIdentity, PTEMPLATE_OPERATOR } from "../../runtime/mod.ts";
import { readExamples } from "../olm_listing.ts";

/** Makes the bundle's files and writes them under `--output`. */
export const bundleCommand = defineCommand({
  summary: "write the OLM bundle and file-based catalog (needs write permission: deno task bundle)",
  flags: BUNDLE,
  async run(values, { catalog, operator }) {
    await writeBundle(values.output, await bundleFor(values, await catalog(values), operator));
    return 0;
  },
});

/** The operator's bundle files for the flags' version and images, and the enabled plugins. */
export async function bundleFor(
  values: Omit<FlagValuesOf<typeof BUNDLE>, "output">,
  entries: CatalogEntry[],
  operator: OperatorIdentity,
): Promise<BundleFile[]> {
  const version = values.version;
  // An own operator's samples (new plugin writes them); ours come with the runtime.
  const own = operator.name !== PTEMPLATE_OPERATOR.name;
  return await olmBundle({
    examples: own ? await readExamples(`${Deno.cwd()}/examples`) : undefined,
    operator,
    version,
    image: values.image ?? `${operator.image}:v${version}`,
    bundleImage: values["bundle-image"] ?? `${operator.image}-bundle:v${version}`,
    replaces: values.replaces,
    catalog: entries,
  });
}

/**
 * Writes the bundle's files under `output`, making only the folders inside the files' own paths
 * (`bundle/manifests`, `catalog/…`): `deno task bundle` may write those and nothing else, not even
 * `.` itself. A write the permissions refuse says which permission the command needs.
 */
async function writeBundle(output: string, files: BundleFile[]): Promise<void> {
  for (const file of files) {
    const path = `${output}/${file.path}`;
    try {
      const folder = file.path.lastIndexOf("/");
      if (folder > 0) {
        await Deno.mkdir(`${output}/${file.path.slice(0, folder)}`, { recursive: true });
      }
      await Deno.writeTextFile(path, file.text);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotCapable)) throw error;
      throw new Error(
        `cannot write ${path}: no write permission. \`deno task bundle\` may write bundle/, ` +
          "bundle.Dockerfile and catalog/ in this folder; for --output DIR, run the bundle " +
          "task's command (deno.json) with --allow-write=DIR instead",
      );
    }
    console.log(`wrote ${path}`);
  }
}
