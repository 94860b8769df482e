/**
 * The guide's "your own repository" section, followed to the letter in a directory outside this
 * repository: its plugin and its own-binary main.ts type-check and build their module graph, the
 * plugin loads into our binary with `--plugin`, and the own binary runs our command line with it.
 */
import { expect } from "expect";
import { runDocumented } from "./fixtures/documented_commands.ts";
import { permissionFlags, spawnOperator } from "./fixtures/operator_command.ts";

const repo = new URL("../", import.meta.url);
const guide = await Deno.readTextFile(new URL("plugins/README.md", repo));
const blocks = Object.fromEntries(
  [...guide.matchAll(/<!-- outside: (\S+) -->\n+```(?:ts|json)\n([\s\S]*?)```/g)].map((
    [, file, text],
  ) => [file, text]),
);
const ours = JSON.parse(await Deno.readTextFile(new URL("deno.json", repo))).imports;

async function deno(cwd: string, ...args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd,
    env: { NO_COLOR: "1" },
    stdin: "null",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

Deno.test("a plugin in another repository, as the guide says: checks, loads, ships", async (t) => {
  expect(Object.keys(blocks).sort()).toEqual(["deno.json", "main.ts", "my_plugin.ts"]);
  const config = JSON.parse(blocks["deno.json"]);
  // The guide's pins are ours, so its readers type-check against what we test.
  for (const [name, target] of Object.entries(config.imports)) {
    if (name !== "ptemplate-operator/") {
      expect({ name, target }).toEqual({ name, target: ours[name] });
    }
  }
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

    await t.step("the own binary runs our command line with its plugins only", async () => {
      const rbac = await deno(dir, "run", ...permissionFlags("start"), "main.ts", "rbac");
      expect(rbac.stderr).toBe("");
      expect(rbac.stdout).toContain("resources: [notes]");
      expect(rbac.stdout).not.toContain("ptemplates");
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
