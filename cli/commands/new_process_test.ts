/** `new` and then the new operator's own `new plugin`, each a deno process as a developer runs it. */
import { expect } from "expect";

const checkout = new URL("../../", import.meta.url).pathname;
const NEW_OP = ["new", "op", "--name", "op", "--domain", "op.example.com"];

/** Runs deno with `args` in `cwd`: its exit code and all it said. */
async function deno(cwd: string, ...args: string[]): Promise<{ code: number; said: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd,
    env: { NO_COLOR: "1" },
    stdin: "null",
  }).output();
  const said = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  return { code: out.code, said };
}

Deno.test("the operator's own binary adds a plugin with its types and RBAC, as the runtime's new does", async () => {
  const dir = await Deno.makeTempDir({ prefix: "new-" });
  try {
    const ours = ["--config", `${checkout}deno.json`, `${checkout}main.ts`];
    expect(await deno(dir, "run", "-A", ...ours, ...NEW_OP)).toMatchObject({ code: 0 });
    // Its main.ts has imported catalog.ts (empty) before new plugin edits it.
    const added = await deno(`${dir}/op`, "run", "-A", "main.ts", "new", "plugin", "Backup");
    expect(added).toEqual({ code: 0, said: expect.stringContaining("ready") });
    expect(added.said).toContain("plugins/backup/backup_types.ts");
    // What it generated is what `deno task crds` makes: its staleness test passes.
    const fresh = await deno(`${dir}/op`, "test", "--allow-read", "--allow-env", "crds_test.ts");
    expect(fresh).toMatchObject({ code: 0 });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
