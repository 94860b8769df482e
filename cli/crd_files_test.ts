import { expect } from "expect";
import { crdFiles, typeFiles } from "./crd_files.ts";
import { webhookFiles } from "./webhook_files.ts";

Deno.test("the committed CRD YAML matches its TypeScript source (run `deno task crds` if not)", async () => {
  for (const { path, text } of [...crdFiles(), ...typeFiles(), ...webhookFiles()]) {
    const committed = await Deno.readTextFile(new URL(`../${path}`, import.meta.url))
      .catch(() => "(missing)");
    expect({ path, upToDate: committed === text }).toEqual({ path, upToDate: true });
  }
});

Deno.test("crds/ holds no CRD file that the catalog does not make, but KMM's", async () => {
  const made = new Set(crdFiles().map((f) => f.path));
  for await (const entry of Deno.readDir(new URL("../crds/", import.meta.url))) {
    if (!entry.name.endsWith(".yaml") || entry.name.startsWith("kmm.sigs.x-k8s.io_")) continue;
    expect(made).toContain(`crds/${entry.name}`);
  }
});

Deno.test("crds/ imports nothing from plugins/ or cli/", async () => {
  for await (const entry of Deno.readDir(new URL("../crds/", import.meta.url))) {
    if (!entry.name.endsWith(".ts")) continue;
    const text = await Deno.readTextFile(new URL(`../crds/${entry.name}`, import.meta.url));
    expect({ file: entry.name, imports: text.match(/from "\.\.\/(plugins|cli)\//g) ?? [] })
      .toEqual({ file: entry.name, imports: [] });
  }
});
