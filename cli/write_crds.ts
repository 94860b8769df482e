/** `deno task crds`: writes the CRD YAML of the catalog's plugins (`crds/`) and `deploy/webhooks/`. */
import { crdFiles, typeFiles } from "./crd_files.ts";
import { webhookFiles } from "./webhook_files.ts";

for (const { path, text } of [...crdFiles(), ...typeFiles(), ...webhookFiles()]) {
  const file = new URL(`../${path}`, import.meta.url);
  await Deno.writeTextFile(file, text);
  console.log(`wrote ${file.pathname}`);
}
