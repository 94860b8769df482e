import { expect } from "expect";
import { crdFiles, pluginFolder, staleFiles, typeFiles, typesBesidePlugin } from "./crd_files.ts";
import { webhookFiles } from "./webhook_files.ts";
import { customResourceDefinition } from "../../kube/mod.ts";

const root = new URL("../../", import.meta.url);

Deno.test("the committed CRD YAML and types match their TypeScript source, and crds/ holds no other (but KMM's)", async () => {
  const files = [...crdFiles(), ...typeFiles(), ...webhookFiles()];
  expect(await staleFiles(files, root, (name) => name.startsWith("kmm.sigs.x-k8s.io_"))).toEqual(
    [],
  );
});

Deno.test("staleFiles names what is missing, stale, or made by nothing", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const at = new URL(`file://${dir}/`);
    await Deno.mkdir(`${dir}/crds`);
    await Deno.writeTextFile(`${dir}/crds/a.yaml`, "old");
    await Deno.writeTextFile(`${dir}/crds/stray.yaml`, "x");
    await Deno.writeTextFile(`${dir}/types.ts`, "same");
    expect(
      await staleFiles([
        { path: "crds/a.yaml", text: "new" },
        { path: "crds/b.yaml", text: "b" },
        { path: "types.ts", text: "same" },
      ], at),
    ).toEqual(["crds/a.yaml (stale)", "crds/b.yaml (missing)", "crds/stray.yaml (not made)"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an own operator's kinds have their types beside their plugins", () => {
  expect(pluginFolder("Backup")).toEqual({ folder: "plugins/backup", stem: "backup" });
  expect(pluginFolder("BackupSchedule").stem).toBe("backup_schedule");
  expect(pluginFolder("DNSRecord").stem).toBe("dns_record");
  const crd = customResourceDefinition(
    {
      group: "x.example.com",
      version: "v1",
      kind: "S3Bucket",
      plural: "s3buckets",
      namespaced: true,
    },
    { spec: { type: "object" } },
  );
  expect(typesBesidePlugin(crd)).toBe("plugins/s3_bucket/s3_bucket_types.ts");
});

Deno.test("crds/ imports nothing from plugins/ or cli/", async () => {
  for await (const entry of Deno.readDir(new URL("../../crds/", import.meta.url))) {
    if (!entry.name.endsWith(".ts")) continue;
    const text = await Deno.readTextFile(new URL(`../../crds/${entry.name}`, import.meta.url));
    expect({ file: entry.name, imports: text.match(/from "\.\.\/(plugins|cli)\//g) ?? [] })
      .toEqual({ file: entry.name, imports: [] });
  }
});
