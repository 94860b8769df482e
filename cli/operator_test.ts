import { expect } from "expect";
import { CONFIG_SET, CONFIG_SET_CRD, configSetPlugin } from "../tests/fixtures/config_set.ts";
import { runOperator } from "./operator.ts";

/** Runs the command line in this process and returns what it printed. */
async function run(argv: string[], options?: Parameters<typeof runOperator>[1]) {
  const out: string[] = [];
  const err: string[] = [];
  const { log, error } = console;
  console.log = (...parts: unknown[]) => void out.push(parts.join(" "));
  console.error = (...parts: unknown[]) => void err.push(parts.join(" "));
  try {
    const code = await runOperator(argv, options);
    return { code, stdout: out.join("\n"), stderr: err.join("\n") };
  } finally {
    console.log = log;
    console.error = error;
  }
}

Deno.test("an own binary's catalog is its own, call by call: no state is kept between them", async () => {
  const catalog = [{ plugin: configSetPlugin, crds: [CONFIG_SET_CRD], enabledByDefault: true }];
  const own = await run(["crds"], { catalog });
  expect(own.code).toBe(0);
  expect(own.stdout).toContain(`name: ${CONFIG_SET.plural}.${CONFIG_SET.group}`);
  expect(own.stdout).not.toContain("ptemplates.pt.example.com");
  // The next call without one has ours again (main(argv, { catalog }) used to keep the last).
  const ours = await run(["crds"]);
  expect(ours.stdout).toContain("name: ptemplates.pt.example.com");
  expect(ours.stdout).not.toContain(CONFIG_SET.group);
});

Deno.test("dispatch: help, the default command, and mistakes as one line with exit 2", async () => {
  expect(await run(["version", "--help"])).toMatchObject({
    code: 0,
    stdout: expect.stringMatching(
      /^ptemplate-operator version: print the version\n\nFlags:\n {2}\(none\)/,
    ),
  });
  // No command is `run`, whose help lists its flags with their defaults from the flag table.
  const help = await run(["--", "--help"]);
  expect(help.stdout).toMatch(/--concurrency N +workers per plugin, 1 to 100 \(default 32\)/);
  expect(await run(["deploy"])).toMatchObject({
    code: 2,
    stderr: expect.stringContaining('unknown command "deploy"'),
  });
  expect(await run(["crds", "extra"])).toEqual({
    code: 2,
    stdout: "",
    stderr: 'error: unexpected argument "extra" (see ptemplate-operator crds --help)',
  });
  expect(await run(["run", "--concurrency=0"])).toMatchObject({
    code: 2,
    stderr: expect.stringContaining(
      "--concurrency must be from 1 to 100 workers per plugin, not 0",
    ),
  });
});
