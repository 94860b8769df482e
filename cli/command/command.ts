/** What a subcommand is: one line of help, its flags (flag_table.ts), and what it does. */
import type { OperatorIdentity } from "../../runtime/mod.ts";
import type { CatalogEntry } from "../plugin_loading/plugin_catalog.ts";
import type { PLUGINS } from "./flag_table.ts";
import type { FlagSpecs, FlagValuesOf } from "../flags/flags.ts";

/** What every command may ask of the binary that runs it. */
export interface CommandContext {
  /** Who the binary is: the names it gives itself (ours, or an own binary's). */
  operator: OperatorIdentity;
  /**
   * The plugins to work with: those the binary carries, with `--plugin` modules loaded and
   * `--plugins` applied.
   */
  catalog(values: FlagValuesOf<typeof PLUGINS>): Promise<CatalogEntry[]>;
  /** The words after the command that are not flags (only for a command that declares `args`). */
  args: string[];
  /** The flags given on the command line (the others have their defaults, or are absent). */
  given: ReadonlySet<string>;
}

/** One subcommand of the command line. */
export interface Command<S extends FlagSpecs = FlagSpecs> {
  /** One line, for `--help`. */
  summary: string;
  /** Its flags, from the flag table. */
  flags: S;
  /** What it takes besides flags, for help (`<dir> | plugin <Kind>`); none when absent. */
  args?: string;
  /**
   * Does it; returns the exit code. Throws a UsageError for a mistake of the command line (exit
   * 2), anything else for one of the world (exit 1): the caller prints it as one line.
   */
  run(values: FlagValuesOf<S>, context: CommandContext): Promise<number>;
}

/** A command, typed by its flags. */
export function defineCommand<S extends FlagSpecs>(command: Command<S>): Command<S> {
  return command;
}
