import { expect } from "expect";
import { CONFIG_MAP, definePlugin } from "../../mod.ts";
import { Registry } from "../../runtime/mod.ts";
import type { CatalogEntry } from "./plugin_catalog.ts";
import { isolatedRunners, pluginHostCommand } from "./plugin_isolation.ts";

const plain = definePlugin({ name: "plain", for: CONFIG_MAP, reconcile: () => {} });
const asking = definePlugin({
  name: "asking",
  for: CONFIG_MAP,
  isolation: "worker",
  reconcile: () => {},
});
const source = (name: string) => ({
  named: name,
  url: `file:///x/${name}.ts`,
  exportName: name,
  folders: ["/x"],
});

function runners(mode: "none" | "worker", entries: CatalogEntry[]) {
  const warned: unknown[] = [];
  const logger = {
    info: () => {},
    warn: (...args: unknown[]) => warned.push(args),
    with: () => logger,
  };
  const choice = { mode, heapLimitMb: 64, timeoutMs: 1000, log: logger as never };
  const runnerFor = isolatedRunners(entries, choice);
  const metrics = new Registry();
  return {
    isolated: entries.filter((e) => runnerFor(e.plugin, metrics)).map((e) => e.plugin.name),
    warned,
  };
}

Deno.test("--plugin-isolation=worker isolates every --plugin plugin; a plugin may ask for it", () => {
  const loaded = (plugin: typeof plain) => ({
    plugin,
    crds: [],
    enabledByDefault: true,
    source: source(plugin.name),
  });
  const carried = { plugin: plain, crds: [], enabledByDefault: true };
  expect(runners("worker", [loaded(plain), loaded(asking)]).isolated).toEqual(["plain", "asking"]);
  expect(runners("none", [loaded(plain), loaded(asking)]).isolated).toEqual(["asking"]);
  // The binary's own plugins have no file a Worker could load: in-process, and said so.
  expect(runners("worker", [carried]).isolated).toEqual([]);
  const built = runners("none", [{ plugin: asking, crds: [], enabledByDefault: true }]);
  expect(built.isolated).toEqual([]);
  expect(built.warned).toHaveLength(1);
});

Deno.test("under deno run a plugin host may read the plugin's folders and the runtime, nothing more", () => {
  const { command, args } = pluginHostCommand(["/plugins/mine", "/plugins/lib"], "mine");
  expect(command).toBe(Deno.execPath());
  const runtime = new URL("../../", import.meta.url).pathname;
  expect(args).toEqual([
    "run",
    "--no-prompt",
    `--allow-read=/plugins/mine,/plugins/lib,${runtime}`,
    new URL("../../runtime/isolation/plugin_host.ts", import.meta.url).href,
    "mine",
  ]);
});
