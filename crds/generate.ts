/** `deno task crds`: writes the CRD YAML files from their TypeScript sources. */
import { CRD_SOURCES, crdFileName, renderCrd } from "./generated_crds.ts";

for (const source of CRD_SOURCES) {
  const file = new URL(crdFileName(source.crd), import.meta.url);
  await Deno.writeTextFile(file, renderCrd(source));
  console.log(`wrote ${file.pathname}`);
}
