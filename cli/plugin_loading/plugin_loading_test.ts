import { expect } from "expect";
import { loadPluginModules, parsePluginArgument } from "./plugin_loading.ts";
import { pluginDigest, pluginFiles, sha256 } from "./plugin_files.ts";

const names = (entries: { plugin: { name: string } }[]) => entries.map((e) => e.plugin.name);

/** A plugin module outside the repository, importing the API as an author's would. */
const NOTE = (name = "note", extra = "") => `
import { CONFIG_MAP, definePlugin } from "ptemplate-operator/mod.ts";
${extra}
export const plugin = definePlugin({
  name: "${name}",
  for: CONFIG_MAP,
  reconcile: () => ({}),
});
`;

async function folder(files: Record<string, string>): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "plugin-loading-" });
  for (const [name, text] of Object.entries(files)) {
    await Deno.mkdir(`${dir}/${name}`.replace(/\/[^/]+$/, ""), { recursive: true });
    await Deno.writeTextFile(`${dir}/${name}`, text);
  }
  return dir;
}

Deno.test("--plugin loads every plugin and CRD a module exports, and says where from", async () => {
  const fixture = new URL("../../tests/fixtures/config_set.ts", import.meta.url);
  const entries = await loadPluginModules([fixture.href]);
  expect(names(entries)).toEqual(["config-set"]);
  expect(entries[0].crds.map((c) => c.metadata?.name)).toEqual(["configsets.test.ptemplate.dev"]);
  expect(entries[0].source).toEqual({
    named: fixture.href,
    url: fixture.href,
    exportName: "configSetPlugin",
    folders: [new URL("../../tests/fixtures", import.meta.url).pathname],
  });
  await expect(loadPluginModules(["./does/not/exist.ts"])).rejects.toThrow(
    /--plugin .\/does\/not\/exist.ts: .*does\/not\/exist.ts is not a file/,
  );
  await expect(loadPluginModules([new URL("../flags/flags.ts", import.meta.url).href])).rejects
    .toThrow(
      /exports no plugin/,
    );
});

Deno.test("--plugin takes a file path, with an optional sha256 pin", () => {
  expect(parsePluginArgument("/p/x.ts")).toEqual({ path: "/p/x.ts", pin: undefined });
  const hex = "AB".repeat(32);
  expect(parsePluginArgument(`/p/x.ts#sha256=${hex}`)).toEqual({
    path: "/p/x.ts",
    pin: hex.toLowerCase(),
  });
  expect(parsePluginArgument("file:///p/x.ts").path).toBe("/p/x.ts");
  expect(() => parsePluginArgument("/p/x.ts#sha256=abc")).toThrow(/64 hexadecimal digits/);
  for (const remote of ["https://example.com/x.ts", "npm:some-plugin", "data:text/plain,x"]) {
    expect(() => parsePluginArgument(remote)).toThrow(/give a file path/);
  }
});

Deno.test("a pin covers the module and every local module it imports", async () => {
  const dir = await folder({
    "main.ts": NOTE("pinned", `import { GREETING } from "./lib/greeting.ts"; void GREETING;`),
    "lib/greeting.ts": `export const GREETING = "hello";`,
  });
  try {
    const { files, uncovered } = await pluginFiles(`${dir}/main.ts`);
    expect(files.map((f) => f.name)).toEqual(["main.ts", "lib/greeting.ts"]);
    expect(uncovered).toEqual([]);
    const digest = await pluginDigest(files);
    const entries = await loadPluginModules([`${dir}/main.ts#sha256=${digest}`]);
    expect(names(entries)).toEqual(["pinned"]);
    // Several files are imported from disk, and checked again once loaded.
    expect(entries[0].source?.url).toMatch(/^file:/);
    await Deno.writeTextFile(`${dir}/lib/greeting.ts`, `export const GREETING = "changed";`);
    const changed = await pluginDigest((await pluginFiles(`${dir}/main.ts`)).files);
    await expect(loadPluginModules([`${dir}/main.ts#sha256=${digest}`])).rejects.toThrow(
      `refused: pinned sha256=${digest}, but its 2 files (main.ts, lib/greeting.ts) now have ` +
        `sha256=${changed}`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a pinned single file runs from the bytes that were hashed", async () => {
  const dir = await folder({ "bundle.js": NOTE("bundled").replace(": () =>", ": () =>") });
  try {
    const bytes = await Deno.readFile(`${dir}/bundle.js`);
    const digest = await sha256(bytes);
    // What sha256sum prints for one file.
    expect(await pluginDigest([{ path: "", name: "bundle.js", bytes }])).toBe(digest);
    const [entry] = await loadPluginModules([`${dir}/bundle.js#sha256=${digest}`]);
    expect(entry.source?.url).toMatch(/^data:application\/javascript;base64,/);
    expect(atob(entry.source!.url.split(",")[1])).toBe(new TextDecoder().decode(bytes));
    await Deno.writeTextFile(`${dir}/bundle.js`, NOTE("tampered"));
    const now = await sha256(await Deno.readFile(`${dir}/bundle.js`));
    await expect(loadPluginModules([`${dir}/bundle.js#sha256=${digest}`])).rejects.toThrow(
      `refused: pinned sha256=${digest}, but the file now has sha256=${now}`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a pin refuses what no digest covers: a remote or computed import", async () => {
  const dir = await folder({
    "main.ts": NOTE("remote", `const name = "./x.ts"; export const lazy = () => import(name);`),
  });
  try {
    const digest = await pluginDigest((await pluginFiles(`${dir}/main.ts`)).files);
    await expect(loadPluginModules([`${dir}/main.ts#sha256=${digest}`])).rejects.toThrow(
      /a pin covers local files only, and the module imports main.ts: import\(\) of a computed specifier: bundle it/,
    );
    // Unpinned, it loads: what it imports later is not ours to check.
    expect(names(await loadPluginModules([`${dir}/main.ts`]))).toEqual(["remote"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a module or folder others may change is refused, naming it and the fix", async () => {
  const dir = await folder({ "lib/shared.ts": "export const X = 1;" });
  await Deno.writeTextFile(
    `${dir}/main.ts`,
    NOTE("open", `import { X } from "./lib/shared.ts"; void X;`),
  );
  try {
    await Deno.chmod(`${dir}/lib/shared.ts`, 0o666);
    await expect(loadPluginModules([`${dir}/main.ts`])).rejects.toThrow(
      `refused: the file ${dir}/lib/shared.ts may be changed by its group and everyone ` +
        `(mode 0666), so someone other than its owner could change what runs: chmod go-w ` +
        `${dir}/lib/shared.ts`,
    );
    await Deno.chmod(`${dir}/lib/shared.ts`, 0o644);
    await Deno.chmod(`${dir}/lib`, 0o775);
    await expect(loadPluginModules([`${dir}/main.ts`])).rejects.toThrow(
      `the folder ${dir}/lib may be changed by its group (mode 0775)`,
    );
    await Deno.chmod(`${dir}/lib`, 0o755);
    // /tmp is everyone's, but sticky: no one else may replace our folder in it.
    expect(names(await loadPluginModules([`${dir}/main.ts`]))).toEqual(["open"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a plugin of an incompatible API version is refused, naming both versions", async () => {
  const dir = await folder({
    "newer.ts": NOTE("newer").replace('name: "newer",', 'name: "newer", pluginApi: "1.7",'),
    "older.ts": NOTE("older").replace('name: "older",', 'name: "older", pluginApi: "0.9",'),
    "same.ts": NOTE("same").replace('name: "same",', 'name: "same", pluginApi: "1.0",'),
  });
  try {
    await expect(loadPluginModules([`${dir}/newer.ts`])).rejects.toThrow(
      /plugin newer was written against plugin API 1\.7, but this ptemplate-operator serves plugin API 1\.0: run it with a ptemplate-operator that serves plugin API 1\.7/,
    );
    await expect(loadPluginModules([`${dir}/older.ts`])).rejects.toThrow(
      /plugin older was written against plugin API 0\.9, but .* serves plugin API 1\.0: build the plugin against plugin API 1\.0/,
    );
    expect(names(await loadPluginModules([`${dir}/same.ts`]))).toEqual(["same"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a module that bundled its own copy of the runtime is refused with the fix", async () => {
  // What a bundle without --external holds: a definePlugin of its own.
  const dir = await folder({
    "bundle.js": `
const definePlugin = (spec) => Object.freeze({ ...spec, pluginApi: "1.0" });
export const plugin = definePlugin({
  name: "selfish",
  for: { group: "", version: "v1", kind: "ConfigMap", plural: "configmaps", namespaced: true },
  reconcile: () => ({}),
});
`,
  });
  try {
    await expect(loadPluginModules([`${dir}/bundle.js`])).rejects.toThrow(
      /plugin selfish was made by a copy of ptemplate-operator bundled into the module \(plugin API 1\.0\), not by this binary's \(plugin API 1\.0\): bundle it with deno bundle --external 'ptemplate-operator\/\*'/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
