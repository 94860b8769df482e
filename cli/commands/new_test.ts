import { expect } from "expect";
import { runOperator } from "../operator.ts";

const checkout = new URL("../../", import.meta.url).pathname;

/** Runs the command line in this process, in `cwd`, and returns what it printed. */
async function run(cwd: string, ...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const { log, error } = console;
  const was = Deno.cwd();
  console.log = (...parts: unknown[]) => void out.push(parts.join(" "));
  console.error = (...parts: unknown[]) => void err.push(parts.join(" "));
  Deno.chdir(cwd);
  try {
    const code = await runOperator(argv);
    return { code, stdout: out.join("\n"), stderr: err.join("\n") };
  } finally {
    Deno.chdir(was);
    console.log = log;
    console.error = error;
  }
}

/** Every file under `dir` with its text, to see that a refusal wrote nothing. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) Object.assign(files, await snapshot(path));
    else files[path] = await Deno.readTextFile(path);
  }
  return files;
}

Deno.test("new and new plugin refuse to overwrite anything, and then write nothing", async () => {
  const dir = await Deno.makeTempDir({ prefix: "new-" });
  try {
    const made = await run(
      dir,
      "new",
      "op",
      "--name",
      "op",
      "--domain",
      "op.example.com",
      "--runtime",
      checkout,
    );
    expect(made).toMatchObject({ code: 0, stderr: "" });
    const again = await run(dir, "new", "op", "--name", "other", "--domain", "o.example.com");
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(
      /^error: deno\.json, operator\.ts, .* already exist in .*\/op: new writes only files that do not exist, and wrote nothing$/,
    );
    // A folder with other files is fine, one with a file new would write is not.
    await Deno.mkdir(`${dir}/partly`);
    await Deno.writeTextFile(`${dir}/partly/notes.txt`, "mine");
    await Deno.writeTextFile(`${dir}/partly/main.ts`, "// mine");
    const partly = await run(
      dir,
      "new",
      "partly",
      "--name",
      "op",
      "--domain",
      "op.example.com",
      "--runtime",
      checkout,
    );
    expect(partly.stderr).toContain("main.ts already exists");
    expect(await snapshot(`${dir}/partly`)).toEqual({
      [`${dir}/partly/notes.txt`]: "mine",
      [`${dir}/partly/main.ts`]: "// mine",
    });

    const before = await snapshot(`${dir}/op`);
    const plugin = await run(`${dir}/op`, "new", "plugin", "Backup");
    expect(plugin).toMatchObject({ code: 0, stderr: "" });
    const after = await snapshot(`${dir}/op`);
    expect(
      Object.keys(after).filter((p) => !(p in before)).map((p) => p.slice(dir.length + 4)).sort(),
    )
      .toEqual([
        "crds/backups.op.example.com.yaml",
        "examples/backup.yaml",
        "plugins/backup/backup.ts",
        "plugins/backup/backup_integration_test.ts",
        "plugins/backup/backup_test.ts",
        "plugins/backup/backup_types.ts",
        "plugins/backup/crd.ts",
        "plugins/backup/mod.ts",
      ]);
    // The existing files it changes: catalog.ts, by its one line and import, and the RBAC that
    // `deno task crds` generates, which now grants what the plugin needs.
    expect(Object.keys(before).filter((p) => before[p] !== after[p]).sort()).toEqual([
      `${dir}/op/catalog.ts`,
      `${dir}/op/deploy/rbac/rbac.yaml`,
    ]);
    expect(after[`${dir}/op/deploy/rbac/rbac.yaml`]).toContain("resources: [backups]");
    // Once more: the kind is there; a file of it exists, so nothing is written.
    await Deno.remove(`${dir}/op/plugins/backup/backup.ts`);
    const twice = await run(`${dir}/op`, "new", "plugin", "Backup");
    expect(twice.code).toBe(1);
    expect(twice.stderr).toContain("plugins/backup/crd.ts, plugins/backup/mod.ts");
    expect(twice.stderr).toContain("crds/backups.op.example.com.yaml");
    const kept = await snapshot(`${dir}/op`);
    delete after[`${dir}/op/plugins/backup/backup.ts`];
    expect(kept).toEqual(after);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("new's mistakes exit 2 and say what is wrong", async () => {
  const dir = await Deno.makeTempDir({ prefix: "new-" });
  try {
    expect(await run(dir, "new", "op")).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("new op needs --name and --domain"),
    });
    expect(await run(dir, "new", "a", "b", "--name", "x", "--domain", "x.io")).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("new takes one folder"),
    });
    expect(await run(dir, "new", "op", "--name", "Op", "--domain", "x.io")).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('operator name "Op" must be lower-case'),
    });
    expect(await run(dir, "new", "op", "--name", "op", "--domain", "x.io", "--runtime", dir))
      .toMatchObject({
        code: 2,
        stderr: expect.stringContaining(`--runtime ${dir} has no mod.ts`),
      });
    expect(await run(dir, "new", "plugin", "Backup", "--domain", "x.io")).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("new plugin takes a Kind only; --domain is for new <dir>"),
    });
    expect(await run(dir, "new", "plugin", "backup")).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('kind "backup" must be UpperCamelCase'),
    });
    // Not in an operator made by new: said so, nothing written.
    expect(await run(dir, "new", "plugin", "Backup")).toMatchObject({
      code: 1,
      stderr: expect.stringContaining("new plugin runs in an operator made by `new`"),
    });
    expect(await snapshot(dir)).toEqual({});
    // Help says what it takes.
    expect((await run(dir, "new", "--help")).stdout).toContain(
      "Usage: ptemplate-operator new <dir> --name NAME --domain DOMAIN | plugin <Kind> [flags]",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** A folder served over HTTP on loopback, as a release URL serves a tag's files. */
function serve(folder: string, status?: number) {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    if (status) return new Response("no", { status });
    const path = new URL(request.url).pathname;
    return await Deno.readFile(`${folder}${path}`).then(
      (bytes) => new Response(bytes),
      () => new Response("not found", { status: 404 }),
    );
  });
}

Deno.test("new without --runtime, run from a checkout: imports that checkout, no network, and says so", async () => {
  const dir = await Deno.makeTempDir({ prefix: "new-" });
  try {
    const made = await run(dir, "new", "op", "--name", "op", "--domain", "op.example.com");
    expect(made).toMatchObject({ code: 0, stderr: "" });
    const config = JSON.parse(await Deno.readTextFile(`${dir}/op/deno.json`));
    const runtime = config.imports["ptemplate-operator/"];
    expect(new URL(runtime, `file://${dir}/op/`).pathname).toBe(checkout);
    expect(made.stdout).toContain(
      `runtime: this checkout, ${runtime} (imported from disk, no network`,
    );
    expect(made.stdout).toContain("for this version's release instead: --runtime https://");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("new --runtime URL: fetched first; one it cannot import from is refused at once, with the fix", async () => {
  const dir = await Deno.makeTempDir({ prefix: "new-" });
  const served = serve(checkout);
  const missing = serve(checkout, 404);
  const broken = serve(checkout, 503);
  const url = (server: Deno.HttpServer<Deno.NetAddr>, path = "/") =>
    `http://127.0.0.1:${server.addr.port}${path}`;
  try {
    const made = await run(
      dir,
      ...["new", "op", "--name", "op", "--domain", "op.example.com", "--runtime", url(served)],
    );
    expect(made).toMatchObject({ code: 0, stderr: "" });
    expect(made.stdout).toContain(`runtime: ${url(served)} (checked: it serves mod.ts)`);
    const config = JSON.parse(await Deno.readTextFile(`${dir}/op/deno.json`));
    expect(config.imports["ptemplate-operator/"]).toBe(url(served));
    // Nothing listens, a 404, a 503, a folder that is not the runtime: refused before writing.
    const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const nobody = `http://127.0.0.1:${closed.addr.port}/`;
    closed.close();
    const cases = [
      [nobody, /Connection refused|connect/i],
      [url(missing), /mod\.ts: 404 Not Found/],
      [url(broken), /mod\.ts: HTTP 503/],
      [url(served, "/docs/"), /mod\.ts: 404 Not Found/],
    ] as const;
    for (const [runtime, why] of cases) {
      const refused = await run(
        dir,
        ...["new", "other", "--name", "op", "--domain", "op.example.com", "--runtime", runtime],
      );
      expect({ runtime, code: refused.code }).toEqual({ runtime, code: 2 });
      expect(refused.stderr).toContain(`cannot import the runtime from ${runtime}`);
      expect(refused.stderr).toMatch(why);
      // The fix: this checkout, which is at hand.
      expect(refused.stderr).toContain(`--runtime ${checkout.replace(/\/$/, "")} (its files`);
    }
    expect(await Deno.stat(`${dir}/other`).catch(() => "none")).toBe("none");
  } finally {
    await Promise.all([served, missing, broken].map((s) => s.shutdown()));
    await Deno.remove(dir, { recursive: true });
  }
});
