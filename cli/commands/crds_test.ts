import { expect } from "expect";
import { runOperator } from "../operator.ts";

/** Runs the command line in this process and returns what it printed. */
async function run(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const { log, error } = console;
  console.log = (...parts: unknown[]) => void out.push(parts.join(" "));
  console.error = (...parts: unknown[]) => void err.push(parts.join(" "));
  try {
    const code = await runOperator(argv);
    return { code, stdout: out.join("\n"), stderr: err.join("\n") };
  } finally {
    console.log = log;
    console.error = error;
  }
}

Deno.test("crds with nothing to print says so, naming the plugins, and exits 1", async () => {
  // A module whose plugin's kind is defined elsewhere, its CRD not exported beside it.
  const module = new URL("../../tests/fixtures/hoarder_plugin.ts", import.meta.url).pathname;
  const none = await run("crds", "--plugin", module);
  expect(none).toEqual({
    code: 1,
    stdout: "",
    stderr: expect.stringContaining(
      "crds: nothing to print: the enabled plugins (hoarder) bring no CRD. A plugin for a kind " +
        "of its own must export the kind's CRD beside it",
    ),
  });
  // One that exports it prints it.
  const some = await run(
    "crds",
    "--plugin",
    new URL("../../tests/fixtures/config_set.ts", import.meta.url).pathname,
  );
  expect(some.code).toBe(0);
  expect(some.stdout).toContain("name: configsets.test.ptemplate.dev");
});
