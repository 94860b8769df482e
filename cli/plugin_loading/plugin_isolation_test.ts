import { expect } from "expect";
import { CONFIG_MAP, definePlugin } from "../../mod.ts";
import { Registry } from "../../runtime/mod.ts";
import type { CatalogEntry } from "./plugin_catalog.ts";
import { isolatedRunners, PLUGIN_HOST_COMMAND, pluginHostCommand } from "./plugin_isolation.ts";
import { frameOf, readFrames } from "../../runtime/mod.ts";
import { spawnOperator } from "../../tests/fixtures/operator_command.ts";

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

Deno.test("the operator's executable is a plugin host (what a compiled binary runs): it relays a Worker and ends with its stdin", async () => {
  // The compiled binary, when the release job names one (spawnOperator).
  const host = spawnOperator([PLUGIN_HOST_COMMAND, "spinner"], { stdin: "piped" });
  const input = host.stdin.getWriter();
  await input.write(frameOf({
    type: "start",
    source: {
      url: new URL("../../runtime/isolation/testdata/worker_plugins.ts", import.meta.url).href,
      exportName: "spinner",
      name: "spinner",
      heapLimitMb: 64,
    },
  }));
  const frames = readFrames(host.stdout);
  expect((await frames.next()).value).toEqual({ type: "ready" });
  const object = { metadata: { name: "ok", namespace: "ns", uid: "ok", resourceVersion: "1" } };
  await input.write(frameOf({ type: "call", id: 7, call: "reconcile", args: [object] }));
  expect((await frames.next()).value).toEqual({
    type: "result",
    id: 7,
    value: { requeueAfterMs: 1 },
  });
  await input.close();
  expect((await frames.next()).done).toBe(true);
  expect((await host.status).code).toBe(0);
  await host.stderr.cancel();
});
