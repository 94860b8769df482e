/** The command line as people meet it: version, help, crds, and mistakes that exit 2 with a reason. */
import { expect } from "expect";
import { parseAllDocuments } from "yaml";
import { spawnOperator } from "./fixtures/operator_command.ts";

async function run(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return await runWith({}, ...args);
}

async function runWith(
  env: Record<string, string>,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = spawnOperator(args, { env });
  const [status, stdout, stderr] = await Promise.all([
    child.status,
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ]);
  return { code: status.code, stdout, stderr };
}

Deno.test("cli: version, --help and crds (what the release smoke test runs)", async () => {
  const version = await run("version");
  expect(version).toMatchObject({
    code: 0,
    stdout: expect.stringMatching(/^ptemplate-operator \d+\.\d+\.\d+ \(plugin API \d+\.\d+, deno /),
  });
  const help = await run("--help");
  expect(help.code).toBe(0);
  for (const word of ["run", "install", "--leader-elect", "--plugins", "Examples:"]) {
    expect(help.stdout).toContain(word);
  }
  const crds = await run("crds", "--plugins", "+memcached");
  expect(crds.code).toBe(0);
  const names = parseAllDocuments(crds.stdout).map((d) => d.toJS()?.metadata?.name);
  expect(names).toEqual(["ptemplates.pt.example.com", "memcacheds.cache.example.com"]);
});

Deno.test("cli: mistakes exit 2 and say what is wrong", async () => {
  const typo = await run("--kubeconfg", "x");
  expect(typo.code).toBe(2);
  expect(typo.stderr).toContain("unknown flag --kubeconfg; did you mean --kubeconfig?");
  const bad = await run("run", "--log-format", "xml");
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain('--log-format takes one of text, json, auto, not "xml"');
  const command = await run("deploy");
  expect(command.code).toBe(2);
  expect(command.stderr).toContain('unknown command "deploy"');
  const plugin = await run("crds", "--plugins", "nosuch");
  expect(plugin.code).toBe(2);
  expect(plugin.stderr).toContain("unknown plugin nosuch; known: kmm-module");
});

Deno.test("cli: a --kubeconfig that is not there is a mistake of the command line", async () => {
  const result = await run("run", "--kubeconfig", "/nonexistent/kubeconfig");
  expect(result.code).toBe(2);
  expect(result.stderr).toContain("--kubeconfig /nonexistent/kubeconfig: file not found");
});

Deno.test("cli: no cluster configuration is one error listing what was tried", async () => {
  const home = await Deno.makeTempDir({ prefix: "ptemplate-home-" });
  try {
    // Deno finds its own cache through HOME too: keep that one.
    const cache = Deno.env.get("XDG_CACHE_HOME") ?? `${Deno.env.get("HOME")}/.cache`;
    const denoDir = Deno.env.get("DENO_DIR") ?? `${cache}/deno`;
    const result = await runWith({ HOME: home, KUBECONFIG: "", DENO_DIR: denoDir }, "run");
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(
        /^error: no Kubernetes cluster configuration found; tried --kubeconfig \(not given\), \$KUBECONFIG \(unset\), in-cluster .*, .*\/\.kube\/config \(missing\)\. Pass --kubeconfig <file>/,
      ),
    ]);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("cli: --plugin runs exactly what it names, even a module that imports main.ts", async () => {
  const fixture = new URL("./fixtures/plugin_using_main.ts", import.meta.url).pathname;
  // The module imports main.ts: its load must not wait on main.ts's own evaluation.
  const alone = await run("rbac", "--plugin", fixture);
  expect(alone).toMatchObject({ code: 0, stderr: "" });
  expect(alone.stdout).toContain("resources: [configsets]");
  expect(alone.stdout).not.toContain("ptemplates");
  const crds = await run("crds", "--plugin", fixture);
  expect(parseAllDocuments(crds.stdout).map((d) => d.toJS()?.metadata?.name)).toEqual([
    "configsets.test.ptemplate.dev",
  ]);
  // Ours beside it only when asked.
  const beside = await run("rbac", "--plugin", fixture, "--plugins", "+status-aggregator");
  expect(beside.code).toBe(0);
  expect(beside.stdout).toContain("resources: [configsets]");
  expect(beside.stdout).toContain("resources: [ptemplates]");
  const help = await run("run", "--help");
  expect(help.stdout).toMatch(/--plugin MODULE +run the plugins a module exports, and only those/);
});
