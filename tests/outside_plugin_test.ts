/**
 * The guide's "your own repository" section, followed to the letter in a directory outside this
 * repository: its plugin and its own-binary main.ts type-check and build their module graph, the
 * plugin loads into our binary with `--plugin`, and the own binary runs our command line with it,
 * under its own name. And its import map, with the release URL pointing at this checkout served
 * over HTTP, resolves every module of the runtime's graph, dynamic imports included.
 */
import { expect } from "expect";
import { RELEASE_URL, RUNTIME_IMPORTS } from "../cli/scaffold/scaffold_operator.ts";
import { runDocumented } from "./fixtures/documented_commands.ts";
import { permissionFlags, spawnOperator } from "./fixtures/operator_command.ts";
import { denoIn as deno } from "./fixtures/deno_in.ts";

const repo = new URL("../", import.meta.url);
const guide = await Deno.readTextFile(new URL("plugins/README.md", repo));
const blocks = Object.fromEntries(
  [...guide.matchAll(/<!-- outside: (\S+) -->\n+```(?:ts|json)\n([\s\S]*?)```/g)].map((
    [, file, text],
  ) => [file, text]),
);
const ours = JSON.parse(await Deno.readTextFile(new URL("deno.json", repo))).imports;

Deno.test("a plugin in another repository, as the guide says: checks, loads, ships", async (t) => {
  expect(Object.keys(blocks).sort()).toEqual(["deno.json", "main.ts", "my_plugin.ts"]);
  const config = JSON.parse(blocks["deno.json"]);
  // The guide's pins are ours, so its readers type-check against what we test; its URL is this
  // version's release, and it names every package the runtime imports (what `new` writes).
  for (const [name, target] of Object.entries(config.imports)) {
    if (name !== "ptemplate-operator/") {
      expect({ name, target }).toEqual({ name, target: ours[name] });
    }
  }
  expect(config.imports["ptemplate-operator/"]).toBe(RELEASE_URL);
  expect(Object.keys(config.imports).filter((n) => n !== "ptemplate-operator/").sort()).toEqual(
    [...RUNTIME_IMPORTS].sort(),
  );
  const dir = await Deno.makeTempDir({ prefix: "my-operator-" });
  try {
    config.imports["ptemplate-operator/"] = repo.href;
    await Deno.writeTextFile(`${dir}/deno.json`, JSON.stringify(config, null, 2));
    await Deno.writeTextFile(`${dir}/my_plugin.ts`, blocks["my_plugin.ts"]);
    await Deno.writeTextFile(`${dir}/main.ts`, blocks["main.ts"]);

    await t.step("the plugin and the own main.ts type-check there", async () => {
      const checked = await deno(dir, "check", "my_plugin.ts", "main.ts");
      expect({ code: checked.code, stderr: checked.stderr }).toMatchObject({ code: 0 });
    });

    await t.step("the own binary's module graph builds (what deno compile bundles)", async () => {
      const info = await deno(dir, "info", "main.ts");
      expect(info.code).toBe(0);
      expect(info.stdout).toContain("my_plugin.ts");
    });

    await t.step("our binary loads it with --plugin", async () => {
      const ours = async (...args: string[]) => {
        const out = await spawnOperator(args).output();
        const decode = (b: Uint8Array) => new TextDecoder().decode(b);
        return { stdout: decode(out.stdout), stderr: decode(out.stderr) };
      };
      const crds = await ours("crds", "--plugin", `${dir}/my_plugin.ts`);
      expect(crds.stderr).toBe("");
      expect(crds.stdout).toContain("name: notes.notes.example.com");
      // The guide's command, as written, in the plugin's repository.
      const rbac = await runDocumented(
        "ptemplate-operator rbac --plugin ./my_plugin.ts > rbac.yaml",
        {
          cwd: dir,
        },
      );
      expect(rbac).toMatchObject({ code: 0, stderr: "" });
      const written = await Deno.readTextFile(`${dir}/rbac.yaml`);
      expect(written).toMatch(/apiGroups: \[notes\.example\.com\]\n\s+resources: \[notes\]/);
      expect(written).toContain("resources: [configmaps]");
      // Exactly the plugin's: the built-in Ptemplate plugins only when asked for.
      expect(written).not.toContain("ptemplates");
      expect(written).toContain("kind: ClusterRoleBinding");
    });

    await t.step(
      "the own binary runs our command line with its plugins only, as itself",
      async () => {
        const rbac = await deno(dir, "run", ...permissionFlags("start"), "main.ts", "rbac");
        expect(rbac.stderr).toBe("");
        expect(rbac.stdout).toContain("resources: [notes]");
        expect(rbac.stdout).not.toContain("ptemplates");
        expect(rbac.stdout).not.toContain("ptemplate-operator");
        expect(rbac.stdout).toContain("name: note-operator-leader-election");
        const version = await deno(dir, "run", ...permissionFlags("start"), "main.ts", "version");
        expect(version.stdout).toMatch(/^note-operator 0\.1\.0 \(plugin API \d+\.\d+, deno /);
      },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** A copy of this checkout over HTTP on loopback, served as raw.githubusercontent.com serves a tag. */
function serveCheckout(): { url: string; close: () => Promise<void> } {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const path = decodeURIComponent(new URL(request.url).pathname);
    if (path.includes("..")) return new Response("no", { status: 400 });
    try {
      const body = await Deno.readFile(new URL(`.${path}`, repo));
      return new Response(body, { headers: { "content-type": "text/plain; charset=utf-8" } });
    } catch {
      return new Response("404: Not Found", { status: 404 });
    }
  });
  return { url: `http://127.0.0.1:${server.addr.port}/`, close: () => server.shutdown() };
}

/** Every import in `deno info --json`'s graph that did not resolve or load, in words. */
function unresolved(info: {
  modules: {
    specifier: string;
    error?: string;
    dependencies?: {
      specifier: string;
      code?: { specifier?: string; error?: string };
      type?: { error?: string };
    }[];
  }[];
}): string[] {
  const problems: string[] = [];
  for (const module of info.modules) {
    if (module.error) problems.push(`${module.specifier}: ${module.error}`);
    for (const dependency of module.dependencies ?? []) {
      const error = dependency.code?.error ?? dependency.type?.error;
      if (error) problems.push(`${module.specifier} imports ${dependency.specifier}: ${error}`);
    }
  }
  return problems;
}

Deno.test("the guide's release-URL import map resolves the runtime's whole graph, dynamic imports included", async () => {
  const config = JSON.parse(blocks["deno.json"]);
  const served = serveCheckout();
  const dir = await Deno.makeTempDir({ prefix: "release-url-" });
  try {
    config.imports["ptemplate-operator/"] = served.url;
    await Deno.writeTextFile(`${dir}/deno.json`, JSON.stringify(config, null, 2));
    // What an own operator can reach: the API, the command line, the test harness, our main.ts.
    const entries = ["mod.ts", "cli/operator.ts", "testing/mod.ts", "main.ts"];
    await Deno.writeTextFile(
      `${dir}/graph.ts`,
      entries.map((entry) => `import "ptemplate-operator/${entry}";\n`).join(""),
    );
    const host = new URL(served.url).host;
    const info = await deno(dir, "info", "--json", `--allow-import=${host}`, "graph.ts");
    expect({ code: info.code, stderr: info.code ? info.stderr : "" }).toEqual({
      code: 0,
      stderr: "",
    });
    const graph = JSON.parse(info.stdout);
    // The whole runtime came over HTTP, the self-managed certificates' dynamic import with it.
    const fetched = graph.modules.map((m: { specifier: string }) => m.specifier);
    expect(fetched.filter((s: string) => s.startsWith(served.url)).length).toBeGreaterThan(100);
    expect(fetched).toContain(`${served.url}runtime/certificates/certificate_authority.ts`);
    expect(unresolved(graph)).toEqual([]);
    // And the map the found problem had (without @peculiar/x509 and reflect-metadata) does not.
    const { "@peculiar/x509": _, "reflect-metadata": __, ...short } = config.imports;
    await Deno.writeTextFile(`${dir}/deno.json`, JSON.stringify({ imports: short }, null, 2));
    const before = await deno(dir, "info", "--json", `--allow-import=${host}`, "graph.ts");
    expect(unresolved(JSON.parse(before.stdout)).map((p) => p.split(": ")[0])).toEqual([
      `${served.url}runtime/certificates/certificate_authority.ts imports reflect-metadata`,
      `${served.url}runtime/certificates/certificate_authority.ts imports @peculiar/x509`,
    ]);
  } finally {
    await served.close();
    await Deno.remove(dir, { recursive: true });
  }
});
