/** `deno task crds`: writes the CRD YAML of the catalog's plugins (`crds/`), their types and `deploy/webhooks/`. */
import { crdFiles, typeFiles, writeFiles } from "./crd_files.ts";
import { webhookFiles } from "./webhook_files.ts";

await writeFiles(
  [...crdFiles(), ...typeFiles(), ...webhookFiles()],
  new URL("../../", import.meta.url),
);
