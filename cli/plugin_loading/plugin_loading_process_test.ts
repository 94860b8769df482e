/** Under `deno run`, a `--plugin` module is type-checked by a `deno check` process before it runs. */
import { expect } from "expect";
import { loadPluginModules } from "./plugin_loading.ts";

const names = (entries: { plugin: { name: string } }[]) => entries.map((e) => e.plugin.name);

/** A plugin module outside the repository, importing the API as an author's would. */
const NOTE = (name: string) => `
import { CONFIG_MAP, definePlugin } from "ptemplate-operator/mod.ts";
export const plugin = definePlugin({
  name: "${name}",
  for: CONFIG_MAP,
  reconcile: () => ({}),
});
`;

async function folder(files: Record<string, string>): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "plugin-loading-" });
  for (const [name, text] of Object.entries(files)) {
    await Deno.writeTextFile(`${dir}/${name}`, text);
  }
  return dir;
}

Deno.test("under deno run a plugin that does not type-check is refused before it runs, naming file and line", async () => {
  // Two type errors, and a top-level write that shows whether the module ever ran.
  const dir = await folder({
    "ill_typed.ts": `import { CONFIG_MAP, definePlugin } from "ptemplate-operator/mod.ts";
Deno.writeTextFileSync(new URL("./ran", import.meta.url), "it ran");
export const plugin = definePlugin({
  name: "ill-typed",
  for: CONFIG_MAP,
  owns: [CONFIG_MAP],
  writesStatus: false,
  reconcile(cm) {
    const count: number = cm.metadata.name;
    return { children: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: count } }] };
  },
});
`,
    "well_typed.ts": NOTE("well-typed"),
  });
  try {
    const refused = loadPluginModules([`${dir}/ill_typed.ts`]);
    await expect(refused).rejects.toThrow(
      `--plugin ${dir}/ill_typed.ts: refused before it runs: it does not type-check (2 errors): ` +
        `${dir}/ill_typed.ts:8:3: TS2322 Type '(cm: Stored<ConfigMap, true>) => { children: `,
    );
    await expect(refused).rejects.toThrow(
      `; ${dir}/ill_typed.ts:9:11: TS2322 Type 'string' is not assignable to type 'number'.. A `,
    );
    await expect(refused).rejects.toThrow(`run \`deno check ${dir}/ill_typed.ts\` until it passes`);
    expect(await Deno.stat(`${dir}/ran`).catch(() => "never")).toBe("never");
    // One that type-checks loads as before.
    expect(names(await loadPluginModules([`${dir}/well_typed.ts`]))).toEqual(["well-typed"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
