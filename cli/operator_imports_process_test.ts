/**
 * What `run` carries for its whole life: the modules main.ts and the run command import
 * statically. Every library there is resident in the operator's memory from start to end, so a
 * library only another command (YAML for manifests, the OLM bundle's), a `--plugin` (the module
 * lexer) or an option (X.509 for self-managed certificates, YAML for a kubeconfig in YAML, the
 * OpenTelemetry API where tracing may be on) needs must come by a dynamic import, where it is used.
 */
import { expect } from "expect";

interface DenoInfo {
  roots: string[];
  modules: {
    specifier: string;
    dependencies?: { specifier: string; isDynamic?: boolean; code?: { specifier?: string } }[];
  }[];
}

/** The packages (npm and node) `entries` import statically, directly or through our modules. */
async function staticPackages(...entries: string[]): Promise<string[]> {
  const { stdout, success } = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", ...entries.map((e) => new URL(`../${e}`, import.meta.url).pathname)],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  expect(success).toBe(true);
  const info: DenoInfo = JSON.parse(new TextDecoder().decode(stdout));
  const modules = new Map(info.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>();
  const packages = new Set<string>();
  const walk = (specifier: string) => {
    if (seen.has(specifier)) return;
    seen.add(specifier);
    for (const dep of modules.get(specifier)?.dependencies ?? []) {
      const target = dep.code?.specifier;
      if (!target || dep.isDynamic) continue;
      if (target.startsWith("file:")) walk(target);
      // npm:/@scope/name@1.2.3/path and node:x, without the version and path.
      else packages.add(target.replace(/^npm:\/?((?:@[^/]+\/)?[^@/]+).*$/, "npm:$1"));
    }
  };
  for (const root of info.roots) walk(root);
  return [...packages].sort();
}

Deno.test("run loads no library it does not use: the logger and node's built-ins", async () => {
  for (const entry of ["main.ts", "cli/commands/run.ts"]) {
    const packages = await staticPackages(entry);
    expect({ entry, npm: packages.filter((p) => p.startsWith("npm:")) })
      .toEqual({ entry, npm: ["npm:@logtape/logtape"] });
  }
});
