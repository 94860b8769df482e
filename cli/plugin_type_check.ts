/**
 * A `--plugin` module is type-checked before it runs, under `deno run`: `deno check` of the module
 * with its own configuration (the nearest deno.json above it, else the one this process runs
 * with). Unchecked, a plugin with a type error runs and returns wrong values, which the API server
 * refuses with a message that names neither the plugin nor the line (`failed to create typed patch
 * object … expected string`). A compiled binary embeds no type checker: there, checking is part of
 * building the plugin (`deno check`, an own operator's `deno task check`).
 */
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";

/** One type error: where, and what. */
export interface TypeProblem {
  /** The file, as a path. */
  file: string;
  line: number;
  column: number;
  /** `TS2322` */
  code: string;
  /** The first line of the diagnostic. */
  message: string;
}

/** What a check found: nothing wrong, type errors, or why it could not check. */
export type TypeCheck =
  | { result: "passed" }
  | { result: "failed"; errors: TypeProblem[] }
  | { result: "unchecked"; reason: string };

/** The nearest deno.json or deno.jsonc in `folder` or above it. */
export function configAbove(folder: string): string | undefined {
  for (let dir = folder;; dir = dirname(dir)) {
    for (const name of ["deno.json", "deno.jsonc"]) {
      try {
        if (Deno.statSync(`${dir}/${name}`).isFile) return `${dir}/${name}`;
      } catch { /* not here */ }
    }
    if (dirname(dir) === dir) return undefined;
  }
}

/** The diagnostics in `deno check`'s output (without colours). */
export function parseDiagnostics(output: string): TypeProblem[] {
  const errors: TypeProblem[] = [];
  const pattern = /^(TS\d+) \[ERROR\]: (.*)$[\s\S]*?^\s+at (\S+):(\d+):(\d+)$/gm;
  for (const [, code, message, where, line, column] of output.matchAll(pattern)) {
    errors.push({
      file: where.startsWith("file:") ? fileURLToPath(where) : where,
      line: Number(line),
      column: Number(column),
      code,
      message,
    });
  }
  return errors;
}

/**
 * Runs `deno check` on the module at `path` with its own configuration. `deno` is the Deno that
 * runs this process (`Deno.execPath()` under `deno run`).
 */
export async function typeCheck(
  path: string,
  options: { deno?: string; mainModule?: string } = {},
): Promise<TypeCheck> {
  const main = options.mainModule ?? Deno.mainModule;
  const config = configAbove(dirname(path)) ??
    (main.startsWith("file:") ? configAbove(dirname(fileURLToPath(main))) : undefined);
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command(options.deno ?? Deno.execPath(), {
      args: ["check", "--quiet", ...config ? ["--config", config] : [], path],
      cwd: dirname(path),
      env: { NO_COLOR: "1" },
      stdin: "null",
    }).output();
  } catch (error) {
    return { result: "unchecked", reason: `deno check could not run: ${(error as Error).message}` };
  }
  if (out.success) return { result: "passed" };
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  const errors = parseDiagnostics(text);
  if (errors.length) return { result: "failed", errors };
  const first = text.split("\n").find((l) => l.startsWith("error:")) ?? text.trim().split("\n")[0];
  return { result: "unchecked", reason: `deno check failed: ${first}` };
}

/** The refusal of a plugin that does not type-check: the first errors, each with file and line. */
export function typeCheckRefusal(value: string, path: string, errors: TypeProblem[]): string {
  const shown = errors.slice(0, 3).map((e) =>
    `${e.file}:${e.line}:${e.column}: ${e.code} ${e.message}`
  );
  const more = errors.length > shown.length ? `; and ${errors.length - shown.length} more` : "";
  return `--plugin ${value}: refused before it runs: it does not type-check (${
    errors.length === 1 ? "1 error" : `${errors.length} errors`
  }): ${shown.join("; ")}${more}. A plugin that does not type-check returns what the API server ` +
    `refuses without naming the plugin or the line: fix it, and run \`deno check ${path}\` until ` +
    "it passes";
}
