/**
 * Parses command-line flags the way Kubernetes tools spell them (`--flag=value`, `--flag value`,
 * `--bool`, `--bool=false`, repeatable flags), refusing unknown flags and bad values by name:
 * each value given is held to its flag's rule (`valid`) before anything else happens.
 */
import { type OperatorIdentity, PTEMPLATE_OPERATOR } from "../../runtime/mod.ts";
import type { ValueRule } from "./value_rules.ts";

export type { ValueRule };

export type FlagKind = "string" | "boolean" | "integer" | "number" | "list";

export interface FlagSpec {
  kind: FlagKind;
  /** What it does, without its default (help adds that). */
  help: string;
  /** What its value is, in help: `FILE`, `N`. */
  placeholder?: string;
  /** For `string` flags: the values allowed. */
  choices?: readonly string[];
  /**
   * The rule a value given must follow (each item of a list), by the grammar the API server, the
   * TLS stack or the file system will hold it to: refused when the flags are parsed, with one
   * line that says why and the fix. Defaults are not checked: they are the operator's own.
   */
  valid?: ValueRule;
  /**
   * Its value when not given: `parseFlags` fills it in, and help says `(default …)`. Written
   * here only, so the help cannot say one thing and the program do another. A function gives a
   * default that is the operator's own (its Lease, its webhook Service): an own binary's help
   * and values say its names, not ours.
   */
  default?: string | number | boolean | ((operator: OperatorIdentity) => string);
  /**
   * When the default depends on where the program runs (in a cluster or not) or on other flags:
   * what help says of it, `(default: …)`. The command works it out; the value stays absent.
   */
  defaultIs?: string | ((operator: OperatorIdentity) => string);
}

export type FlagSpecs = Record<string, FlagSpec>;

export type FlagValues = Record<string, string | boolean | number | string[] | undefined>;

/** What one flag's value is, from its spec: `--concurrency` an integer is a `number`. */
export type FlagValue<S extends FlagSpec> = S extends { kind: "boolean" } ? boolean
  : S extends { kind: "integer" | "number" } ? number
  : S extends { kind: "list" } ? string[]
  : S extends { choices: readonly (infer C)[] } ? C
  : string;

/**
 * The values `parseFlags` returns for `specs`, each typed by its spec: always there when it has a
 * `default`, else absent when not given.
 */
export type FlagValuesOf<S extends FlagSpecs> =
  & { [K in keyof S as S[K] extends { default: unknown } ? K : never]: FlagValue<S[K]> }
  & { [K in keyof S as S[K] extends { default: unknown } ? never : K]?: FlagValue<S[K]> };

/** A usage mistake; the CLI prints it with a pointer to `--help` and exits 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

function closest(name: string, candidates: string[]): string | undefined {
  const distance = (a: string, b: string) => {
    const row = Array.from({ length: b.length + 1 }, (_, i) => i);
    for (let i = 1; i <= a.length; i++) {
      let previous = row[0];
      row[0] = i;
      for (let j = 1; j <= b.length; j++) {
        const current = row[j];
        row[j] = Math.min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
        previous = current;
      }
    }
    return row[b.length];
  };
  const best = candidates.map((c) => ({ c, d: distance(name, c) })).sort((x, y) => x.d - y.d)[0];
  return best && best.d <= 3 ? best.c : undefined;
}

/**
 * Splits `args` into flag values and positional arguments; `given` names the flags that were
 * given (the rest have their defaults, or are absent).
 */
export function parseFlags<S extends FlagSpecs>(
  args: string[],
  specs: S,
  operator: OperatorIdentity = PTEMPLATE_OPERATOR,
): { values: FlagValuesOf<S>; positional: string[]; given: Set<string> } {
  const values: FlagValues = {};
  const positional: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--") {
      positional.push(...args.slice(i + 1));
      break;
    }
    if (!arg.startsWith("-") || arg === "-") {
      positional.push(arg);
      continue;
    }
    const match = arg.match(/^--?([^=]+)(?:=(.*))?$/s)!;
    const name = match[1];
    const spec = specs[name];
    if (!spec) {
      const hint = closest(name, Object.keys(specs));
      throw new UsageError(`unknown flag --${name}${hint ? `; did you mean --${hint}?` : ""}`);
    }
    let raw = match[2];
    if (spec.kind === "boolean") {
      if (raw === undefined) {
        values[name] = true;
        continue;
      }
      if (!["true", "false", "1", "0"].includes(raw)) {
        throw new UsageError(`--${name} takes true or false, not "${raw}"`);
      }
      values[name] = raw === "true" || raw === "1";
      continue;
    }
    if (raw === undefined) {
      raw = args[++i];
      if (raw === undefined) {
        throw new UsageError(`--${name} needs a value (${spec.placeholder ?? spec.kind})`);
      }
    }
    if (raw.trim() === "") {
      // An empty value is a slip (a template's unset variable), never a way to say "none".
      throw new UsageError(
        `--${name} is empty: give a value (${spec.placeholder ?? spec.kind}), or leave it out`,
      );
    }
    if (spec.kind === "integer") {
      if (!/^-?\d+$/.test(raw)) {
        throw new UsageError(`--${name} takes a whole number, not "${raw}"`);
      }
      values[name] = Number(raw);
    } else if (spec.kind === "number") {
      if (!/^-?(\d+\.?\d*|\.\d+)$/.test(raw)) {
        throw new UsageError(`--${name} takes a number, not "${raw}"`);
      }
      values[name] = Number(raw);
    } else if (spec.kind === "list") {
      const list = (values[name] as string[] | undefined) ?? [];
      list.push(...raw.split(",").map((s) => s.trim()).filter(Boolean));
      values[name] = list;
    } else {
      if (spec.choices && !spec.choices.includes(raw)) {
        throw new UsageError(`--${name} takes one of ${spec.choices.join(", ")}, not "${raw}"`);
      }
      values[name] = raw;
    }
    checkValue(name, spec, values[name]!);
  }
  const given = new Set(Object.keys(values));
  for (const [name, spec] of Object.entries(specs)) {
    if (values[name] === undefined && spec.default !== undefined) {
      values[name] = defaultOf(spec, operator);
    }
  }
  return { values: values as FlagValuesOf<S>, positional, given };
}

/** Holds a value given to its flag's rule (each item of a list); a UsageError when it breaks it. */
function checkValue(name: string, spec: FlagSpec, value: NonNullable<FlagValues[string]>): void {
  if (!spec.valid || typeof value === "boolean") return;
  for (const item of Array.isArray(value) ? value : [value]) {
    const problem = spec.valid.problem(item, `--${name}`);
    if (problem) throw new UsageError(problem);
  }
}

/** A flag's default, the operator's own when it depends on who the operator is. */
function defaultOf(spec: FlagSpec, operator: OperatorIdentity) {
  return typeof spec.default === "function" ? spec.default(operator) : spec.default;
}

/** The flag table for `--help`: each flag, what it does, and its default (the operator's). */
export function describeFlags(
  specs: FlagSpecs,
  operator: OperatorIdentity = PTEMPLATE_OPERATOR,
): string {
  const rows = Object.entries(specs).map(([name, spec]) => {
    const value = spec.kind === "boolean" ? "" : ` ${spec.placeholder ?? spec.kind}`;
    const byDefault = spec.default !== undefined
      ? ` (default ${defaultOf(spec, operator)})`
      : spec.defaultIs !== undefined
      ? ` (default: ${
        typeof spec.defaultIs === "function" ? spec.defaultIs(operator) : spec.defaultIs
      })`
      : "";
    return [`  --${name}${value}`, spec.help + byDefault];
  });
  const width = Math.max(...rows.map(([left]) => left.length)) + 2;
  return rows.map(([left, help]) => left.padEnd(width) + help).join("\n");
}
