/**
 * The command line as a library: `main.ts` runs it with our plugins, and an own binary runs it
 * with its own (plugins/README.md, "Writing a plugin in your own repository"). It parses the
 * command and its flags, runs the command, and turns every failure into one line and an exit
 * code: 2 for a mistake of the command line, 1 for one of the world. It keeps no state between
 * calls.
 */
import { KubeconfigError } from "../kube/mod.ts";
import type { Command, CommandContext } from "./command.ts";
import {
  bundleCommand,
  crdsCommand,
  installCommand,
  rbacCommand,
  runCommand,
  scorecardCommand,
  uninstallCommand,
  versionCommand,
} from "./commands/mod.ts";
import { RUN } from "./flag_table.ts";
import { describeFlags, parseFlags, UsageError } from "./flags.ts";
import {
  builtInCatalog,
  type CatalogEntry,
  selectPlugins,
  withLoadedPlugins,
} from "./plugin_catalog.ts";
import { loadPluginModules } from "./plugin_loading.ts";
import { VERSION } from "./version.ts";

/** What an own binary brings to the command line. */
export interface OperatorOptions {
  /**
   * The plugins this binary carries (their CRDs, whether each runs by default); default ours
   * (cli/plugin_catalog.ts). Every command works with these: run, crds, rbac, install, bundle.
   */
  catalog?: CatalogEntry[];
  // An own binary's identity (its name, domain, Lease), issue 24, is to be given here too.
}

/** A command whose flags are known only when it is picked (the values are its own). */
type AnyCommand = Omit<Command, "run"> & {
  run(values: never, context: CommandContext): Promise<number>;
};

/** The subcommands, in the order help lists them. */
const COMMANDS: Record<string, AnyCommand> = {
  run: runCommand,
  crds: crdsCommand,
  rbac: rbacCommand,
  install: installCommand,
  uninstall: uninstallCommand,
  bundle: bundleCommand,
  scorecard: scorecardCommand,
  version: versionCommand,
};

/**
 * Runs the command line `argv` (without the program's name) and returns the exit code. Never
 * throws: what goes wrong is printed on stderr as one line.
 *
 * @example An own binary: the runtime's command line with one's own plugins.
 * ```ts ignore
 * import { runOperator } from "ptemplate-operator/cli/operator.ts";
 * import { NOTE_CRD, notePlugin } from "./my_plugin.ts";
 *
 * if (import.meta.main) {
 *   runOperator(Deno.args, {
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
  const command = COMMANDS[name];
  if (!command) {
    console.error(
      `unknown command "${name}"; commands: ${Object.keys(COMMANDS).join(", ")} (see --help)`,
    );
    return 2;
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    console.log(named ? commandHelp(name, command) : help());
    return 0;
  }
  const carried = options.catalog ?? builtInCatalog();
  const context: CommandContext = {
    catalog: async (values) => {
      const loaded = await loadPluginModules(values.plugin ?? []);
      return selectPlugins(withLoadedPlugins(carried, loaded), values.plugins);
    },
  };
  try {
    const { values, positional } = parseFlags(rest, command.flags);
    if (positional.length) throw new UsageError(`unexpected argument "${positional[0]}"`);
    // The values of the command's own flags, parsed by its own specs.
    return await command.run(values as never, context);
  } catch (error) {
    // One line, never a stack: 2 when the command line is wrong, 1 when the world is.
    const misuse = error instanceof UsageError ||
      (error instanceof KubeconfigError && error.misuse);
    const message = error instanceof Error ? error.message : String(error);
    console.error(
      `error: ${message.replaceAll("\n", " ")}${
        misuse ? ` (see ptemplate-operator ${name} --help)` : ""
      }`,
    );
    return misuse ? 2 : 1;
  }
}

/** `ptemplate-operator <command> --help`: what it does, and its flags. */
function commandHelp(name: string, command: AnyCommand): string {
  return `ptemplate-operator ${name}: ${command.summary}\n\nFlags:\n${
    describeFlags(command.flags) || "  (none)"
  }\n`;
}

/** `ptemplate-operator --help`: the commands, the run flags, and examples. */
function help(): string {
  return `ptemplate-operator ${VERSION}: a Kubernetes operator for Ptemplate resources

Usage: ptemplate-operator [command] [flags]

Commands:
${Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}`).join("\n")}

Run flags:
${describeFlags(RUN)}

Examples:
  ptemplate-operator install                        # add the Ptemplate CRD to the current cluster
  ptemplate-operator --kubeconfig ~/.kube/config    # run against it from a workstation
  ptemplate-operator --namespace demo --log-format text --leader-elect
  ptemplate-operator crds > crds.yaml               # review the CRDs before installing them
  ptemplate-operator rbac --plugins +guestbook      # the RBAC those plugins need
  ptemplate-operator --plugins -kmm-module           # run without the KMM Module plugin
  ptemplate-operator run --help                     # flags of one command
`;
}
