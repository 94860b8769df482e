/** `deno task crds`: writes the CRD YAML files of the catalog's plugins into `crds/`. */
import { crdFiles } from "./crd_files.ts";

for (const { path, text } of crdFiles()) {
  const file = new URL(`../${path}`, import.meta.url);
  await Deno.writeTextFile(file, text);
  console.log(`wrote ${file.pathname}`);
}
