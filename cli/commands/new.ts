/**
 * `new`: an operator repository of its own (`new <dir> --name --domain [--runtime]`), or, inside
 * one, a kind with its plugin and tests (`new plugin <Kind>`). Both write only files that do not
 * exist yet (but the one entry `new plugin` adds to catalog.ts, and the RBAC that `deno task crds`
 * generates into deploy/rbac), and refuse before writing anything when one does.
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { defineCommand } from "../command.ts";
import type { CrdFile } from "../crd_files.ts";
import { NEW } from "../flag_table.ts";
import { type FlagValuesOf, UsageError } from "../flags.ts";
import type { CatalogEntry } from "../plugin_catalog.ts";
import { RBAC_FILE } from "../rbac_file.ts";
import { isDefinedHere, looksLikePlugin, type OperatorIdentity } from "../../runtime/mod.ts";
import { chooseRuntime } from "../runtime_reference.ts";
import { operatorFiles } from "../scaffold_operator.ts";
import { catalogEntry, kindNames, pluginFiles, withCatalogEntry } from "../scaffold_plugin.ts";

type NewValues = FlagValuesOf<typeof NEW>;

export const newCommand = defineCommand({
  summary: "make an operator repository of its own, or (inside one) a kind with its plugin",
  flags: NEW,
  args: "<dir> --name NAME --domain DOMAIN | plugin <Kind>",
  async run(values, { args }) {
    return args[0] === "plugin"
      ? await newPlugin(values, args.slice(1))
      : await newOperator(values, args);
  },
});

/** `new <dir>`: the repository, importing the runtime from `--runtime`. */
async function newOperator(values: NewValues, args: string[]): Promise<number> {
  if (args.length !== 1) {
    throw new UsageError("new takes one folder: new <dir> --name NAME --domain DOMAIN");
  }
  const { name, domain } = values;
  if (!name || !domain) {
    throw new UsageError(
      `new ${args[0]} needs --name and --domain (e.g. --name backup-operator ` +
        "--domain backup.example.com)",
    );
  }
  const target = resolve(Deno.cwd(), args[0]);
  // Checked before anything is written: a URL that cannot be reached is refused at once.
  const { runtime, note } = await chooseRuntime({ given: values.runtime, target });
  const files = usage(() => operatorFiles({ name, domain, runtime }));
  console.log(note);
  await writeNew(target, files, "new");
  console.log(
    `\n${name} is in ${args[0]}. Next:\n  cd ${args[0]}\n  deno task new plugin <Kind>   ` +
      "# a kind with its CRD, types, plugin, tests and a sample\n  deno task test                " +
      "# its tests, its deploy rendered and installed, its bundle validated",
  );
  return 0;
}

/** `new plugin <Kind>`, in an operator made by `new` (the current folder). */
async function newPlugin(values: NewValues, args: string[]): Promise<number> {
  const given = (["name", "domain", "runtime"] as const).filter((flag) => values[flag]);
  if (given.length) {
    throw new UsageError(
      `new plugin takes a Kind only; --${given[0]} is for new <dir> (the kind's group is the ` +
        "operator's domain)",
    );
  }
  if (args.length !== 1) throw new UsageError("new plugin takes one Kind: new plugin Backup");
  const names = usage(() => kindNames(args[0]));
  const root = pathToFileURL(`${Deno.cwd()}/`);
  const operator = await operatorHere(root);
  const catalogUrl = new URL("catalog.ts", root);
  const catalog = await Deno.readTextFile(catalogUrl).catch(() => "");
  const edited = withCatalogEntry(catalog, names);
  if (!edited) {
    throw new Error(
      `catalog.ts does not end its CATALOG list with a line "];" after its imports, as \`new\` ` +
        `wrote it: add \`${catalogEntry(names)}\` to it yourself, or write the plugin by hand`,
    );
  }
  const generated = [
    `crds/${names.plural}.${operator.domain}.yaml`,
    `${names.folder}/${names.stem}_types.ts`,
  ];
  const sources = pluginFiles(operator, names);
  await refuseExisting(Deno.cwd(), [...sources.map((f) => f.path), ...generated]);
  await writeNew(Deno.cwd(), sources, "new plugin");
  await write(catalogUrl.pathname, edited, "new plugin", false);
  console.log(`added ${names.plugin} to ${catalogUrl.pathname}`);
  // The generated types, YAML and RBAC, by the operator's own `deno task crds` code, for its
  // catalog with the new kind in it.
  const crds = await import(new URL("crds.ts", root).href) as {
    generatedFiles?: (catalog?: CatalogEntry[]) => CrdFile[];
  };
  if (!crds.generatedFiles) {
    throw new Error("crds.ts exports no generatedFiles(): run `deno task crds`");
  }
  const files = crds.generatedFiles(await catalogWith(root, names.folder));
  await writeNew(Deno.cwd(), files.filter((file) => generated.includes(file.path)), "new plugin");
  const rbac = files.find((file) => file.path === RBAC_FILE);
  if (rbac) await write(`${Deno.cwd()}/${RBAC_FILE}`, rbac.text, "new plugin", false);
  if (rbac) console.log(`wrote ${Deno.cwd()}/${RBAC_FILE} (generated: the plugin's RBAC)`);
  console.log(`\n${names.kind} (${operator.domain}/v1alpha1) is ready. Next: deno task test`);
  return 0;
}

/**
 * The operator's catalog with the plugin of `folder` in it. catalog.ts as this process imports it
 * may be the one before the edit: a module is evaluated once per process, and an operator's own
 * binary imported it at start. So the new plugin comes from its own module, which nothing has
 * imported yet, and is added unless the catalog has it already.
 */
async function catalogWith(root: URL, folder: string): Promise<CatalogEntry[]> {
  const { CATALOG = [] } = await import(new URL("catalog.ts", root).href) as {
    CATALOG?: CatalogEntry[];
  };
  const module = await import(new URL(`${folder}/mod.ts`, root).href) as Record<string, unknown>;
  const plugin = Object.values(module).find(looksLikePlugin);
  if (!plugin || !isDefinedHere(plugin)) {
    throw new Error(`${folder}/mod.ts exports no plugin of this runtime: run \`deno task crds\``);
  }
  if (CATALOG.some((entry) => entry.plugin.name === plugin.name)) return CATALOG;
  const crds = Object.values(module).filter((value) =>
    (value as { kind?: string } | null)?.kind === "CustomResourceDefinition"
  ) as CatalogEntry["crds"];
  return [...CATALOG, { plugin, crds, enabledByDefault: true }];
}

/** The identity in the operator folder's operator.ts (what `new` wrote). */
async function operatorHere(root: URL): Promise<OperatorIdentity> {
  const url = new URL("operator.ts", root);
  const module = await import(url.href).catch((error) => {
    throw new Error(
      `new plugin runs in an operator made by \`new\`: cannot load ${url.pathname} ` +
        `(${error.message.split("\n")[0]})`,
    );
  }) as { OPERATOR?: OperatorIdentity };
  const operator = module.OPERATOR;
  if (typeof operator?.name !== "string" || typeof operator.domain !== "string") {
    throw new Error(`${url.pathname} exports no OPERATOR made by defineOperator`);
  }
  return operator;
}

/** Runs `make`; a TypeError of the input (a name, a domain, a kind) is a usage mistake. */
function usage<T>(make: () => T): T {
  try {
    return make();
  } catch (error) {
    if (error instanceof TypeError) throw new UsageError(error.message);
    throw error;
  }
}

/** Refuses, naming them, when any of `paths` (under `root`) exists. */
async function refuseExisting(root: string, paths: string[]): Promise<void> {
  const existing: string[] = [];
  for (const path of paths) {
    if (await Deno.lstat(`${root}/${path}`).then(() => true, () => false)) existing.push(path);
  }
  if (existing.length) {
    throw new Error(
      `${existing.join(", ")} already exist${existing.length === 1 ? "s" : ""} in ${root}: ` +
        "new writes only files that do not exist, and wrote nothing",
    );
  }
}

/** Writes files that do not exist yet, after checking that none does. */
async function writeNew(root: string, files: CrdFile[], command: string): Promise<void> {
  await refuseExisting(root, files.map((f) => f.path));
  for (const { path, text } of files) await write(`${root}/${path}`, text, command, true);
}

/** Writes one file (only a new one when `createNew`); a missing permission says which. */
async function write(path: string, text: string, command: string, createNew: boolean) {
  try {
    // Only a folder that is missing: making one that exists asks to write where it is.
    const folder = path.slice(0, path.lastIndexOf("/"));
    if (!await Deno.stat(folder).then(() => true, () => false)) {
      await Deno.mkdir(folder, { recursive: true });
    }
    await Deno.writeTextFile(path, text, { createNew });
  } catch (error) {
    if (!(error instanceof Deno.errors.NotCapable)) throw error;
    throw new Error(
      `cannot write ${path}: no write permission. ${
        command === "new"
          ? "`deno task new` in a ptemplate-operator checkout may write beside it (../<dir>); " +
            "elsewhere run main.ts new with --allow-read --allow-write=<dir>"
          : "run `deno task new plugin <Kind>` in the operator's folder: its task may write " +
            "plugins/, crds/ and catalog.ts"
      }`,
    );
  }
  if (createNew) console.log(`wrote ${path}`);
}
