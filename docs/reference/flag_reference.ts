/**
 * docs/reference/flags.md from the flag table (cli/flag_table.ts) through the commands that use
 * it (cli/operator.ts loads each): every command, every flag with its value, default, rule and help, and the
 * environment `run` reads. Nothing here names a flag: a flag added to the table is on the page.
 */
import { loadAllCommands } from "../../cli/operator.ts";
import type { Command } from "../../cli/command.ts";
import { RUN_ENVIRONMENT } from "../../cli/flag_table.ts";
import type { EnvSpecs } from "../../cli/environment.ts";
import type { FlagSpec } from "../../cli/flags.ts";
import { type OperatorIdentity, PTEMPLATE_OPERATOR } from "../../runtime/mod.ts";
import { code, generatedHeader, prose, table } from "./markdown.ts";

/** Every command the command line has, by name, `run` first (as help lists them). */
export async function commandsByName(): Promise<[string, Command][]> {
  return (await loadAllCommands()) as [string, Command][];
}

/** What a flag's default is, in words (the operator's own names where it depends on them). */
function defaultText(spec: FlagSpec, operator: OperatorIdentity): string | undefined {
  if (spec.default !== undefined) {
    const value = typeof spec.default === "function" ? spec.default(operator) : spec.default;
    return code(String(value));
  }
  if (spec.defaultIs !== undefined) {
    return typeof spec.defaultIs === "function" ? spec.defaultIs(operator) : spec.defaultIs;
  }
}

/** One flag as a list item: how it is written, what it does, its default, rule and choices. */
function flagItem(flag: string, spec: FlagSpec, operator: OperatorIdentity): string {
  const written = spec.kind === "boolean"
    ? `${code(`--${flag}`)} or ${code(`--${flag}=false`)}`
    : code(`--${flag} ${spec.placeholder ?? spec.kind}`);
  const byDefault = defaultText(spec, operator);
  const notes = [
    spec.kind === "list" ? "Repeatable, or comma-separated." : "",
    !spec.valid && spec.kind === "integer" ? "A whole number." : "",
    !spec.valid && spec.kind === "number" ? "A number." : "",
    spec.choices ? `One of ${spec.choices.map(code).join(", ")}.` : "",
    spec.valid ? `Must be ${spec.valid.rule}.` : "",
    byDefault === undefined ? "" : `Default: ${byDefault}.`,
  ].filter(Boolean);
  return `- ${written}: ${prose(`${spec.help}. ${notes.join(" ")}`.trimEnd())}`;
}

/** A sentence from a summary: a capital first, a full stop last. */
function sentence(text: string): string {
  return text[0].toUpperCase() + text.slice(1) + (text.endsWith(".") ? "" : ".");
}

/** The page. */
export async function flagsPage(
  operator: OperatorIdentity = PTEMPLATE_OPERATOR,
): Promise<string> {
  const sections = (await commandsByName()).map(([name, command]) => {
    const usage = `${operator.name} ${name}${command.args ? ` ${command.args}` : ""}` +
      (Object.keys(command.flags).length ? " [flags]" : "");
    const items = Object.entries(command.flags).map(([flag, spec]) =>
      flagItem(flag, spec, operator)
    );
    const flags = items.length ? items.join("\n") + "\n" : "No flags.\n";
    return `## ${name}\n\n${sentence(command.summary)}\n\n${code(usage)}\n\n${flags}`;
  });
  const environment = table(
    ["variable", "rule", "what it is"],
    Object.entries(RUN_ENVIRONMENT as EnvSpecs).map(([name, spec]) => [
      code(name),
      [spec.list ? "a comma-separated list" : "", spec.valid?.rule ?? ""]
        .filter(Boolean).join(": "),
      prose(spec.help),
    ]),
  );
  return `${generatedHeader("Command-line flags", "cli/flag_table.ts and cli/commands/")}
Every command of \`${operator.name}\` (the binary, or \`deno task start\` in a checkout) and its
flags. \`run\` is the default command. A flag is \`--name=value\` or \`--name value\`; a value given
is checked against the flag's rule before anything starts (exit code 2 and one line naming the flag
and the fix). Defaults are the operator's own and are not checked. \`<command> --help\` prints the
same.

${sections.join("\n")}
## Environment of run

Read by \`run\` at start; a value set that breaks its rule is refused as a flag's would be.
(\`LOG_TOKENS\` and \`LOG_STREAM\` are read by npm:yaml alone, and cleared before a kubeconfig is
read.)

${environment}`;
}
