/**
 * `new`: an operator repository of its own (`new <dir> --name --domain [--runtime]`), or, inside
 * one, a kind with its plugin and tests (`new plugin <Kind>`). Both write only files that do not
 * exist yet (but the one entry `new plugin` adds to catalog.ts), and refuse before writing
 * anything when one does.
 */
import { relative, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { defineCommand } from "../command.ts";
import type { CrdFile } from "../crd_files.ts";
import { NEW } from "../flag_table.ts";
import { type FlagValuesOf, UsageError } from "../flags.ts";
import type { OperatorIdentity } from "../../runtime/mod.ts";
import { operatorFiles, RELEASE_URL } from "../scaffold_operator.ts";
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
  const files = usage(() =>
    operatorFiles({ name, domain, runtime: runtimeFor(values.runtime ?? RELEASE_URL, target) })
  );
  await writeNew(target, files, "new");
  console.log(
    `\n${name} is in ${args[0]}. Next:\n  cd ${args[0]}\n  deno task new plugin <Kind>   ` +
      "# a kind with its CRD, types, plugin and tests\n  deno task test",
  );
  return 0;
}

/**
 * How the new repository's import map names the runtime: a URL as given (ending in `/`), or a
 * checkout's folder relative to the new repository, checked to be one.
 */
function runtimeFor(runtime: string, target: string): string {
  if (/^https?:\/\//.test(runtime)) return runtime.endsWith("/") ? runtime : `${runtime}/`;
  const folder = resolve(Deno.cwd(), runtime);
  for (const file of ["mod.ts", "cli/operator.ts", "testing/mod.ts"]) {
    try {
      Deno.statSync(`${folder}/${file}`);
    } catch {
      throw new UsageError(
        `--runtime ${runtime} has no ${file}: give the folder of a ptemplate-operator checkout, ` +
          "or a URL",
      );
    }
  }
  // Relative when near (a sibling checkout, as docs/guides/own_operator.md has it), so the
  // folders can move together; else absolute.
  const path = relative(target, folder) || ".";
  if (path.split("/").filter((part) => part === "..").length > 2) return `${folder}/`;
  return `${path.startsWith(".") ? path : `./${path}`}/`;
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
  // The generated types and YAML, by the operator's own `deno task crds` code.
  const crds = await import(new URL("crds.ts", root).href) as {
    generatedFiles?: () => CrdFile[];
  };
  if (!crds.generatedFiles) {
    throw new Error("crds.ts exports no generatedFiles(): run `deno task crds`");
  }
  await writeNew(
    Deno.cwd(),
    crds.generatedFiles().filter((file) => generated.includes(file.path)),
    "new plugin",
  );
  console.log(`\n${names.kind} (${operator.domain}/v1alpha1) is ready. Next: deno task test`);
  return 0;
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
