/**
 * Reads the environment variables a command declares (cli/command/flag_table.ts), each held to its
 * rule as a flag's value is: one that breaks it is a UsageError naming the variable, the value and
 * the fix, before anything starts.
 */
import { UsageError } from "./flags.ts";
import type { ValueRule } from "./value_rules.ts";

/** One environment variable a command reads. */
export interface EnvSpec {
  /** What it does, for the reference docs. */
  help: string;
  /** A comma-separated list (each item held to `valid`); empty or unset means none. */
  list?: boolean;
  /** The rule a value set must follow (each item of a list). */
  valid?: ValueRule;
}

export type EnvSpecs = Record<string, EnvSpec>;

/** The values of `specs`' variables: a list is `string[]`, the rest `string`, unset undefined. */
export type EnvValuesOf<S extends EnvSpecs> = {
  [K in keyof S]?: S[K] extends { list: true } ? string[] : string;
};

/** Reads and checks every variable of `specs` (`get` is the environment; tests give their own). */
export function readEnvironment<S extends EnvSpecs>(
  specs: S,
  get: (name: string) => string | undefined = (name) => Deno.env.get(name),
): EnvValuesOf<S> {
  const values: Record<string, string | string[]> = {};
  for (const [name, spec] of Object.entries(specs)) {
    const raw = get(name);
    if (raw === undefined) continue;
    const items = spec.list ? raw.split(",").map((item) => item.trim()).filter(Boolean) : [raw];
    for (const item of items) {
      const problem = spec.valid?.problem(item, name);
      if (problem) throw new UsageError(problem);
    }
    values[name] = spec.list ? items : raw;
  }
  return values as EnvValuesOf<S>;
}
