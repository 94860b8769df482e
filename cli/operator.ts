/**
 * The command line as a library: `main.ts` runs it with our plugins, and an own binary runs it
 * with its own (plugins/README.md, "Writing a plugin in your own repository"). It parses the
 * command and its flags, runs the command, and turns every failure into one line and an exit
 * code: 2 for a mistake of the command line, 1 for one of the world. It keeps no state between
 * calls.
 */
import { KubeconfigError } from "../kube/mod.ts";
import { type OperatorIdentity, PTEMPLATE_OPERATOR, runPluginHost } from "../runtime/mod.ts";
import type { Command, CommandContext } from "./command.ts";
import { RUN } from "./flag_table.ts";
import { describeFlags, parseFlags, UsageError } from "./flags.ts";
import {
  builtInCatalog,
  type CatalogEntry,
  selectPlugins,
  withLoadedPlugins,
} from "./plugin_catalog.ts";
import { PLUGIN_HOST_COMMAND } from "./plugin_isolation.ts";

export type { CatalogEntry };

/** What an own binary brings to the command line. */
export interface OperatorOptions {
  /**
   * Who the binary is (`defineOperator({ name, domain, version })`); default ours,
   * PTEMPLATE_OPERATOR. Every name it gives itself follows: help and version text, the RBAC
   * `rbac` prints, the Lease, field managers, labels, annotations and finalizers on objects, the
   * Event component, webhook names, the OLM package, the user agent.
   */
  operator?: OperatorIdentity;
  /**
   * The plugins this binary carries (their CRDs, whether each runs by default); default ours
   * (cli/plugin_catalog.ts). Every command works with these: run, crds, rbac, install, bundle.
   */
  catalog?: CatalogEntry[];
}

/** A command whose flags are known only when it is picked (the values are its own). */
type AnyCommand = Omit<Command, "run"> & {
  run(values: never, context: CommandContext): Promise<number>;
};

/**
 * The subcommands, in the order help lists them, each loaded when it is asked for: `run` does
 * not carry the others' code (OLM bundles, scaffolds, YAML) in its memory for its whole life.
 * The specifiers are literal, so `deno compile` still finds and embeds every command.
 */
const COMMANDS: Record<string, () => Promise<AnyCommand>> = {
  run: async () => (await import("./commands/run.ts")).runCommand,
  crds: async () => (await import("./commands/crds.ts")).crdsCommand,
  rbac: async () => (await import("./commands/rbac.ts")).rbacCommand,
  install: async () => (await import("./commands/install.ts")).installCommand,
  check: async () => (await import("./commands/check.ts")).checkCommand,
  explain: async () => (await import("./commands/explain.ts")).explainCommand,
  uninstall: async () => (await import("./commands/uninstall.ts")).uninstallCommand,
  bundle: async () => (await import("./commands/bundle.ts")).bundleCommand,
  scorecard: async () => (await import("./commands/scorecard.ts")).scorecardCommand,
  version: async () => (await import("./commands/version.ts")).versionCommand,
  new: async () => (await import("./commands/new.ts")).newCommand,
};

/** Every subcommand, loaded, by name in the order help lists them (the flag reference's source). */
export function loadAllCommands(): Promise<[string, AnyCommand][]> {
  return Promise.all(
    Object.entries(COMMANDS).map(async ([name, load]): Promise<[string, AnyCommand]> => [
      name,
      await load(),
    ]),
  );
}

/**
 * Runs the command line `argv` (without the program's name) and returns the exit code. Never
 * throws: what goes wrong is printed on stderr as one line.
 *
 * @example An own binary: the runtime's command line with one's own plugins.
 * ```ts ignore
 * import { runOperator } from "ptemplate-operator/cli/operator.ts";
 * import { defineOperator } from "ptemplate-operator/mod.ts";
 * import { NOTE_CRD, notePlugin } from "./my_plugin.ts";
 *
 * if (import.meta.main) {
 *   runOperator(Deno.args, {
 *     operator: defineOperator({ name: "note-operator", domain: "notes.example.com", version: "0.1.0" }),
 *     catalog: [{ plugin: notePlugin, crds: [NOTE_CRD], enabledByDefault: true }],
 *   }).then((code) => Deno.exit(code));
 * }
 * ```
 */
export async function runOperator(
  argv: string[],
  options: OperatorOptions = {},
): Promise<number> {
  // `deno task start -- --flag` passes the separator on; it means nothing here.
  const args = argv[0] === "--" ? argv.slice(1) : argv;
  const named = args[0] && !args[0].startsWith("-") ? args[0] : undefined;
  const name = named ?? "run";
  const rest = named ? args.slice(1) : args;
  if (rest[0] === "--") rest.shift();
  // Not a command for people: the operator starts itself so to run a plugin's Worker in a
  // process it can kill (cli/plugin_isolation.ts).
  if (name === PLUGIN_HOST_COMMAND) return await runPluginHost();
  const operator = options.operator ?? PTEMPLATE_OPERATOR;
  const load = COMMANDS[name];
  if (!load) {
    console.error(
      `unknown command "${name}"; commands: ${Object.keys(COMMANDS).join(", ")} (see --help)`,
    );
    return 2;
  }
  const command = await load();
  if (rest.includes("--help") || rest.includes("-h")) {
    console.log(
      named ? commandHelp(operator, name, command) : await help(operator, carriedOf(options)),
    );
    return 0;
  }
  const carried = carriedOf(options);
  const context: Omit<CommandContext, "args" | "given"> = {
    operator,
    catalog: async (values) => {
      // The loader (and its module lexer) only when there is a `--plugin` to load.
      const loaded = values.plugin?.length
        ? await (await import("./plugin_loading.ts")).loadPluginModules(values.plugin)
        : [];
      return selectPlugins(withLoadedPlugins(carried, loaded), values.plugins);
    },
  };
  try {
    const { values, positional, given } = parseFlags(rest, command.flags, operator);
    if (positional.length && !command.args) {
      throw new UsageError(`unexpected argument "${positional[0]}"`);
    }
    // The values of the command's own flags, parsed by its own specs.
    return await command.run(values as never, { ...context, args: positional, given });
  } catch (error) {
    // One line, never a stack: 2 when the command line is wrong, 1 when the world is.
    const misuse = error instanceof UsageError ||
      (error instanceof KubeconfigError && error.misuse);
    const message = error instanceof Error ? error.message : String(error);
    console.error(
      `error: ${message.replaceAll("\n", " ")}${
        misuse ? ` (see ${operator.name} ${name} --help)` : ""
      }`,
    );
    return misuse ? 2 : 1;
  }
}

/** The plugins the binary carries: its own catalog, or ours. */
function carriedOf(options: OperatorOptions): CatalogEntry[] {
  return options.catalog ?? builtInCatalog();
}

/** `<operator> <command> --help`: what it does, and its flags. */
function commandHelp(operator: OperatorIdentity, name: string, command: AnyCommand): string {
  const usage = command.args ? `\n\nUsage: ${operator.name} ${name} ${command.args} [flags]` : "";
  return `${operator.name} ${name}: ${command.summary}${usage}\n\nFlags:\n${
    describeFlags(command.flags, operator) || "  (none)"
  }\n`;
}

/** `<operator> --help`: the commands, the run flags, and examples with its own plugins. */
async function help(operator: OperatorIdentity, catalog: CatalogEntry[]): Promise<string> {
  const { name } = operator;
  const on = catalog.find((e) => e.enabledByDefault)?.plugin.name;
  const off = catalog.find((e) => !e.enabledByDefault)?.plugin.name;
  const examples: (readonly [string, string])[] = [
    ["install", "add the CRDs to the current cluster"],
    ["check", "stored objects this version's rules would refuse as new (before an upgrade)"],
    ["explain ptemplate default/consumer-pod", "why it did what it did to an object"],
    ["--kubeconfig ~/.kube/config", "run against it from a workstation"],
    ["--namespace demo --log-format text --leader-elect", ""],
    ["crds > crds.yaml", "review the CRDs before installing them"],
    ["rbac", "the RBAC its plugins need, named after it"],
    ...off ? [[`rbac --plugins +${off}`, "with a plugin that is off by default"]] as const : [],
    ...on ? [[`--plugins -${on}`, `run without the ${on} plugin`]] as const : [],
    ["run --help", "flags of one command"],
  ];
  const width = Math.max(...examples.map(([args]) => args.length)) + name.length + 4;
  const summaries = await Promise.all(
    Object.entries(COMMANDS).map(async ([name, load]) =>
      `  ${name.padEnd(10)} ${(await load()).summary}`
    ),
  );
  return `${name} ${operator.version}: ${operator.description}

Usage: ${name} [command] [flags]

Commands:
${summaries.join("\n")}

Run flags:
${describeFlags(RUN, operator)}

Examples:
${
    examples.map(([args, why]) =>
      why ? `  ${name} ${args}`.padEnd(width) + `# ${why}` : `  ${name} ${args}`
    ).join("\n")
  }
`;
}
