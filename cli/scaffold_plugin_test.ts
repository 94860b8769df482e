import { expect } from "expect";
import { defineOperator } from "../runtime/mod.ts";
import { kindNames, pluginFiles, withCatalogEntry } from "./scaffold_plugin.ts";
import { operatorFiles } from "./scaffold_operator.ts";

Deno.test("a Kind's names: plural, plugin, constant, variable, folder", () => {
  expect(kindNames("Backup")).toEqual({
    kind: "Backup",
    plural: "backups",
    plugin: "backup",
    constant: "BACKUP",
    variable: "backup",
    folder: "plugins/backup",
    stem: "backup",
  });
  expect(kindNames("BackupSchedule")).toMatchObject({
    plural: "backupschedules",
    plugin: "backup-schedule",
    constant: "BACKUP_SCHEDULE",
    variable: "backupSchedule",
  });
  expect(kindNames("Policy").plural).toBe("policies");
  expect(kindNames("Gateway").plural).toBe("gateways");
  expect(kindNames("Box").plural).toBe("boxes");
  expect(kindNames("Mesh").plural).toBe("meshes");
  // A variable that is a keyword, or a name the files use for something else, gets a suffix.
  expect(kindNames("Class").variable).toBe("classObject");
  expect(kindNames("Admin").variable).toBe("adminObject");
  expect(kindNames("Namespaces").variable).toBe("namespaces");
});

Deno.test("a Kind that cannot be one, or would clash with what its files import, is refused", () => {
  for (const kind of ["backup", "Back-up", "1Backup", "", "B".repeat(64)]) {
    expect(() => kindNames(kind)).toThrow(/must be UpperCamelCase/);
  }
  for (const kind of ["ConfigMap", "Namespace", "Resource", "Operator", "KubeObject"]) {
    expect(() => kindNames(kind)).toThrow(/pick another name/);
  }
});

Deno.test("new plugin adds its import and entry to the catalog new wrote, and only to that", () => {
  const catalog =
    operatorFiles({ name: "backup-operator", domain: "example.com", runtime: "../r/" })
      .find((f) => f.path === "catalog.ts")!.text;
  const once = withCatalogEntry(catalog, kindNames("Backup"))!;
  const twice = withCatalogEntry(once, kindNames("BackupScheduleWithAVeryLongNameIndeed"))!;
  expect(twice).toBe(
    catalog
      .replace(
        "\n\nexport const",
        '\nimport { BACKUP_CRD, backupPlugin } from "./plugins/backup/mod.ts";\n' +
          "import {\n  BACKUP_SCHEDULE_WITH_A_VERY_LONG_NAME_INDEED_CRD,\n" +
          "  backupScheduleWithAVeryLongNameIndeedPlugin,\n" +
          '} from "./plugins/backup_schedule_with_a_very_long_name_indeed/mod.ts";\n\nexport const',
      )
      .replace(
        "\n];",
        "\n  { plugin: backupPlugin, crds: [BACKUP_CRD], enabledByDefault: true },\n" +
          "  {\n    plugin: backupScheduleWithAVeryLongNameIndeedPlugin,\n" +
          "    crds: [BACKUP_SCHEDULE_WITH_A_VERY_LONG_NAME_INDEED_CRD],\n" +
          "    enabledByDefault: true,\n  },\n];",
      ),
  );
  // A catalog rewritten by hand (no closing line of its own, or no import before it) is left alone.
  expect(withCatalogEntry("export const CATALOG = [a, b];\n", kindNames("Backup"))).toBeUndefined();
  expect(withCatalogEntry("export const CATALOG: X[] = [\n];\n", kindNames("Backup")))
    .toBeUndefined();
});

Deno.test("a plugin's files name the kind in the operator's domain", () => {
  const operator = defineOperator({
    name: "backup-operator",
    domain: "backup.example.com",
    version: "0.1.0",
  });
  const files = pluginFiles(operator, kindNames("Backup"));
  expect(files.map((f) => f.path)).toEqual([
    "plugins/backup/crd.ts",
    "plugins/backup/backup.ts",
    "plugins/backup/mod.ts",
    "plugins/backup/backup_test.ts",
    "plugins/backup/backup_integration_test.ts",
    "examples/backup.yaml",
  ]);
  const crd = files[0].text;
  expect(crd).toContain('group: "backup.example.com"');
  expect(crd).toContain('plural: "backups"');
  expect(crd).toContain('from "./backup_types.ts"');
  // Its integration test runs the Manager as the operator, not as ptemplate-operator.
  expect(files[4].text).toContain("operator: OPERATOR");
  // A sample to apply, valid for the CRD's schema (the own-operator test applies it).
  expect(files[5].text).toContain(
    "apiVersion: backup.example.com/v1alpha1\nkind: Backup\nmetadata:\n  name: sample\nspec:\n  message: ",
  );
});
