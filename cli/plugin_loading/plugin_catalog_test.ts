import { expect } from "expect";
import { builtInCatalog, crdsOf, selectPlugins, withLoadedPlugins } from "./plugin_catalog.ts";
import { loadPluginModules } from "./plugin_loading.ts";

const names = (entries: { plugin: { name: string } }[]) => entries.map((e) => e.plugin.name);

Deno.test("--plugins: default set, exact set, edits, and unknown names", () => {
  const catalog = builtInCatalog();
  expect(names(selectPlugins(catalog, undefined))).toEqual([
    "kmm-module",
    "consumer-daemonset",
    "status-aggregator",
  ]);
  expect(names(selectPlugins(catalog, ["status-aggregator"]))).toEqual(["status-aggregator"]);
  expect(names(selectPlugins(catalog, ["-kmm-module"]))).toEqual([
    "consumer-daemonset",
    "status-aggregator",
  ]);
  expect(() => selectPlugins(catalog, ["kmm-modul"])).toThrow(
    /unknown plugin kmm-modul; known: kmm-module/,
  );
  expect(() => selectPlugins(catalog, ["kmm-module", "-status-aggregator"])).toThrow(/not both/);
  expect(() => selectPlugins(catalog, ["-kmm-module", "-consumer-daemonset", "-status-aggregator"]))
    .toThrow(/leaves no plugin/);
  expect(crdsOf(selectPlugins(catalog, undefined)).map((c) => c.metadata?.name)).toEqual([
    "ptemplates.pt.example.com",
  ]);
});

Deno.test("--plugin runs what it loads; the built-ins only when --plugins adds them", async () => {
  const loaded = await loadPluginModules([
    new URL("../../tests/fixtures/config_set.ts", import.meta.url).href,
  ]);
  const catalog = withLoadedPlugins(builtInCatalog(), loaded);
  expect(names(selectPlugins(catalog, undefined))).toEqual(["config-set"]);
  expect(crdsOf(selectPlugins(catalog, undefined)).map((c) => c.metadata?.name)).toEqual([
    "configsets.test.ptemplate.dev",
  ]);
  expect(names(selectPlugins(catalog, ["+kmm-module", "+status-aggregator"]))).toEqual([
    "kmm-module",
    "status-aggregator",
    "config-set",
  ]);
  expect(names(selectPlugins(catalog, ["consumer-daemonset"]))).toEqual(["consumer-daemonset"]);
  expect(() => selectPlugins(catalog, ["-config-set"])).toThrow(/leaves no plugin/);
  // Without --plugin, nothing changes.
  const catalogAlone = builtInCatalog();
  expect(withLoadedPlugins(catalogAlone, [])).toBe(catalogAlone);
});

Deno.test("--plugin of a plugin named like a built-in runs in its place", async () => {
  const loaded = await loadPluginModules([
    new URL("../../tests/fixtures/consumer_daemonset_next.ts", import.meta.url).href,
  ]);
  const catalog = withLoadedPlugins(builtInCatalog(), loaded);
  const chosen = selectPlugins(catalog, ["+kmm-module", "+status-aggregator"]);
  expect(names(chosen)).toEqual(["kmm-module", "status-aggregator", "consumer-daemonset"]);
  expect(chosen.at(-1)?.source?.named).toContain("consumer_daemonset_next.ts");
});
