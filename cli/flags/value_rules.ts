/**
 * The rules a flag's or an environment variable's value must follow, declared beside it in the
 * flag table: the API server's name grammars, numeric ranges, addresses, files that must exist.
 * Each says what it asks for (help and the reference docs) and, for a value that breaks it, one
 * line that names the flag, the value, why, and what to give instead.
 */
import { type NameGrammar, nameProblem, suggestedName } from "../../kube/names.ts";
import { parseBindAddress } from "../../runtime/mod.ts";

/** A rule for one value (each item of a list). */
export interface ValueRule {
  /** What the value must be, in a few words: "a Lease name (a DNS subdomain)". */
  rule: string;
  /**
   * Why `value`, given as `name` (`--concurrency`, `WATCH_NAMESPACE`), breaks the rule, and the
   * fix, as one line that starts with `name`; undefined when it follows the rule.
   */
  problem(value: string | number, name: string): string | undefined;
}

/** A name of `what` the API server takes (`grammar`), or it refuses the first request with it. */
export function objectName(grammar: NameGrammar, what: string): ValueRule {
  const rule = {
    label: `${what} (a DNS label: a-z, 0-9 and '-', at most 63)`,
    subdomain: `${what} (a DNS subdomain: a-z, 0-9, '-' and '.', at most 253)`,
    dns1035: `${what} (a DNS-1035 label: a-z, 0-9 and '-', starting with a letter, at most 63)`,
  }[grammar];
  return {
    rule,
    problem(value, name) {
      const why = nameProblem(String(value), grammar);
      if (why === undefined) return undefined;
      const suggestion = suggestedName(String(value), grammar);
      const fix = suggestion === undefined
        ? `give ${rule.replace(what, "one")}`
        : name.startsWith("--")
        ? `for example ${name}=${suggestion}`
        : `for example ${JSON.stringify(suggestion)}`;
      return `${name} ${JSON.stringify(value)} is not ${what}, which the API server would ` +
        `refuse: ${why}; ${fix}`;
    },
  };
}

/** A number from `min` to `max`, in `unit` ("workers per plugin"); whole when `integer`. */
export function numberFrom(
  min: number,
  max: number,
  unit: string,
  options: { integer?: boolean; above?: boolean } = {},
): ValueRule {
  const bottom = options.above ? `above ${min}` : `at least ${min}`;
  const range = max === Infinity
    ? bottom
    : options.above
    ? `${bottom} and at most ${max}`
    : `from ${min} to ${max}`;
  const words = unit ? `${range} ${unit}` : range;
  return {
    rule: options.integer ? `a whole number ${words}` : words,
    problem(value, name) {
      const n = Number(value);
      const ok = Number.isFinite(n) && (options.above ? n > min : n >= min) && n <= max &&
        (!options.integer || Number.isInteger(n));
      return ok ? undefined : `${name} must be ${words}, not ${value}`;
    },
  };
}

/**
 * The longest a timer can wait: Deno's (and V8's) timers take a signed 32-bit count of
 * milliseconds, and a longer delay fires at once.
 */
export const MAX_TIMER_SECONDS = Math.floor((2 ** 31 - 1) / 1000);

/** A duration in seconds, above 0, that a timer can wait for. */
export function seconds(): ValueRule {
  return numberFrom(0, MAX_TIMER_SECONDS, "seconds", { above: true });
}

/** An address to listen on: `host:port`, `:port`, or `0` to turn the server off. */
export const BIND_ADDRESS: ValueRule = {
  rule: "host:port, :port, or 0 (off)",
  problem(value, name) {
    if (value === "") return `${name} is empty: give host:port, :port, or 0 to turn it off`;
    try {
      parseBindAddress(String(value), name);
      return undefined;
    } catch (error) {
      return `${(error as Error).message}; for example :8443 or 127.0.0.1:8080`;
    }
  },
};

/** A path that must exist when it is given, as a `file` or a `directory`; `fix` says how to get one. */
export function existing(type: "file" | "directory", fix: string): ValueRule {
  return {
    rule: `an existing ${type}`,
    problem(value, name) {
      const path = String(value);
      if (path === "") return `${name} is empty: give a ${type}, or leave the flag out`;
      let info: Deno.FileInfo;
      try {
        info = Deno.statSync(path);
      } catch (error) {
        if (error instanceof Deno.errors.NotFound) {
          return `${name} ${path}: ${type === "file" ? "file" : "directory"} not found; ${fix}`;
        }
        if (error instanceof Deno.errors.PermissionDenied) {
          return `${name} ${path}: not allowed to look at it (${error.message}); ${fix}`;
        }
        throw error;
      }
      if (type === "directory" && !info.isDirectory) {
        return `${name} ${path} is not a directory; ${fix}`;
      }
      if (type === "file" && info.isDirectory) return `${name} ${path} is a directory, not a file`;
      return undefined;
    },
  };
}
