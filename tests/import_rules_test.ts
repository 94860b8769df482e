/**
 * The dependency rules, checked on the real import graph: the folders depend one way (util ← kube
 * ← runtime ← mod.ts ← reconcilers, plugins ← cli, main.ts), and inside `runtime/` the rooms do too. Each room
 * names the rooms it may use, all earlier in the list, so no cycle can form; outside code (another
 * room, the manager, the tests, the CLI) reaches a room only through its `mod.ts`, its contract.
 */
import { expect } from "expect";

/**
 * The rooms of `runtime/`, in their one-way order: each may import only the rooms it names, which
 * come before it. Why this order: everything logs and counts (observe); the caches and leader
 * election need only that; a ring of shards is leases and the caches they start; the plugin API
 * names cache readers; controllers and webhooks run what the API declares, through a runner
 * (isolation: in-process or in a Worker). The manager runs them all, and `runtime/mod.ts` sits on top.
 */
export const ROOMS: { room: string; uses: string[] }[] = [
  { room: "identity", uses: [] },
  { room: "observe", uses: [] },
  { room: "cache", uses: ["observe"] },
  { room: "leader", uses: ["observe"] },
  { room: "shards", uses: ["observe", "cache", "leader"] },
  { room: "plugin", uses: ["observe", "cache"] },
  { room: "isolation", uses: ["identity", "observe", "cache", "plugin"] },
  { room: "reconcile", uses: ["identity", "observe", "cache", "plugin", "isolation"] },
  { room: "webhooks", uses: ["observe", "cache", "plugin"] },
  { room: "certificates", uses: ["observe"] },
  {
    room: "manager",
    uses: [
      "identity",
      "observe",
      "cache",
      "leader",
      "shards",
      "plugin",
      "isolation",
      "reconcile",
      "webhooks",
    ],
  },
];

/**
 * The top folders, and which of them each may import (besides itself); the runtime reads its own
 * version from deno.json (our identity, runtime/identity/).
 */
const FOLDERS: Record<string, string[]> = {
  util: [],
  kube: ["util"],
  runtime: ["util", "kube", "deno.json"],
};

/** One import: the importing file and the file it names, both relative to the repository. */
export type Edge = [from: string, to: string];

/** Every broken rule among `edges`, in words; empty when the graph keeps them all. */
export function importViolations(edges: Edge[], rooms = ROOMS): string[] {
  const out: string[] = [];
  const order = new Map(rooms.map((r, i) => [r.room, i]));
  for (const [i, { room, uses }] of rooms.entries()) {
    for (const used of uses) {
      if (!((order.get(used) ?? Infinity) < i)) {
        out.push(`room ${room} may use only rooms before it, not ${used}`);
      }
    }
  }
  const roomOf = (path: string) => path.match(/^runtime\/([a-z_]+)\//)?.[1];
  for (const [from, to] of edges) {
    const source = roomOf(from);
    const target = roomOf(to);
    // A test or benchmark may use a room's test doubles (its testdata/).
    const testdata = to.includes("/testdata/") &&
      (/_(test|bench)\.ts$/.test(from) || /^bench\//.test(from));
    if (target && source !== target && !testdata) {
      if (!to.endsWith(`runtime/${target}/mod.ts`)) {
        out.push(`${from} imports ${to}: outside ${target}/, use runtime/${target}/mod.ts`);
      }
      const uses = rooms.find((r) => r.room === source)?.uses;
      if (source && !uses?.includes(target)) {
        out.push(`${from} imports ${to}: room ${source} may not use room ${target}`);
      }
    }
    if (source && !target && to.startsWith("runtime/")) {
      out.push(`${from} imports ${to}: a room never imports what sits on top of it`);
    }
    const folder = from.split("/")[0];
    // A test or benchmark beside the code may use the test harness; the code itself may not.
    const allowed = /_(test|bench)\.ts$/.test(from)
      ? FOLDERS[folder]?.concat("testing")
      : FOLDERS[folder];
    const toFolder = to.includes("/") ? to.split("/")[0] : to;
    if (allowed && toFolder !== folder && !allowed.includes(toFolder)) {
      out.push(`${from} imports ${to}: ${folder}/ may use only ${allowed.join(", ") || "itself"}`);
    }
    // Plugins and the flagship reconcilers see the public API only (their own folder, mod.ts, the
    // test harness, CRD types).
    if (/^(plugins|reconcilers)\//.test(from) && !from.endsWith("_test.ts")) {
      const own = to.startsWith(from.split("/").slice(0, 3).join("/").replace(/[^/]+\.ts$/, ""));
      if (!own && !/^(mod\.ts|testing\/mod\.ts|crds\/[a-z_]+\.ts)$/.test(to)) {
        out.push(`${from} imports ${to}: plugins use mod.ts, testing/mod.ts and crds/ only`);
      }
    }
  }
  return out;
}

const root = new URL("../", import.meta.url);

async function filesUnder(folder: string): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of Deno.readDir(new URL(`${folder}/`, root))) {
    const path = folder === "." ? entry.name : `${folder}/${entry.name}`;
    if (entry.isDirectory) {
      if (![".git", "node_modules", ".cache", ".scratch", "toolchain"].includes(entry.name)) {
        out.push(...await filesUnder(path));
      }
    } else if (entry.name.endsWith(".ts")) out.push(path);
  }
  return out;
}

/** The repository's relative imports (static and dynamic), resolved to paths. */
async function importGraph(): Promise<Edge[]> {
  const edges: Edge[] = [];
  for (const file of await filesUnder(".")) {
    const text = await Deno.readTextFile(new URL(file, root));
    const specifiers = text.matchAll(
      /(?:^|\n)\s*(?:import|export)[^"';]*?from\s*["'](\.[^"']+)["']|import\(\s*["'](\.[^"']+)["']/g,
    );
    for (const match of specifiers) {
      const url = new URL(match[1] ?? match[2], new URL(file, root));
      edges.push([file, url.pathname.slice(root.pathname.length)]);
    }
  }
  return edges;
}

Deno.test("the import graph keeps every rule", async () => {
  const edges = await importGraph();
  expect(edges.length).toBeGreaterThan(500);
  expect(importViolations(edges)).toEqual([]);
});

Deno.test("the rules catch a wrong edge (checked on made-up graphs)", () => {
  // A room reaching back up the order.
  expect(importViolations([["runtime/observe/events.ts", "runtime/leader/mod.ts"]])).toEqual([
    "runtime/observe/events.ts imports runtime/leader/mod.ts: room observe may not use room leader",
  ]);
  // Two siblings that are not in each other's list.
  expect(importViolations([["runtime/webhooks/x.ts", "runtime/reconcile/mod.ts"]])).toEqual([
    "runtime/webhooks/x.ts imports runtime/reconcile/mod.ts: room webhooks may not use room reconcile",
  ]);
  // Past a room's contract, from outside (the manager, a test) and from another room.
  expect(importViolations([["runtime/manager/manager.ts", "runtime/cache/informer.ts"]])).toEqual([
    "runtime/manager/manager.ts imports runtime/cache/informer.ts: outside cache/, use runtime/cache/mod.ts",
  ]);
  expect(importViolations([["runtime/reconcile/applier.ts", "runtime/cache/store.ts"]])).toEqual([
    "runtime/reconcile/applier.ts imports runtime/cache/store.ts: outside cache/, use runtime/cache/mod.ts",
  ]);
  // A room importing the top; the client knowing the runtime; a plugin past the API.
  expect(importViolations([["runtime/cache/informer.ts", "runtime/mod.ts"]])).toEqual([
    "runtime/cache/informer.ts imports runtime/mod.ts: a room never imports what sits on top of it",
  ]);
  expect(importViolations([["runtime/cache/informer.ts", "runtime/manager/mod.ts"]])).toEqual([
    "runtime/cache/informer.ts imports runtime/manager/mod.ts: room cache may not use room manager",
  ]);
  expect(importViolations([["kube/client.ts", "runtime/observe/mod.ts"]])).toEqual([
    "kube/client.ts imports runtime/observe/mod.ts: kube/ may use only util",
  ]);
  expect(importViolations([["plugins/memcached/memcached.ts", "runtime/plugin/mod.ts"]])).toEqual([
    "plugins/memcached/memcached.ts imports runtime/plugin/mod.ts: plugins use mod.ts, testing/mod.ts and crds/ only",
  ]);
  expect(importViolations([["reconcilers/status_aggregator.ts", "runtime/reconcile/mod.ts"]]))
    .toEqual([
      "reconcilers/status_aggregator.ts imports runtime/reconcile/mod.ts: plugins use mod.ts, testing/mod.ts and crds/ only",
    ]);
  // An order that names a later room is itself refused: no cycle can be declared.
  expect(importViolations([], [{ room: "a", uses: ["b"] }, { room: "b", uses: ["a"] }])).toEqual([
    "room a may use only rooms before it, not b",
  ]);
  // And what the rules allow passes.
  expect(importViolations([
    ["runtime/reconcile/applier.ts", "runtime/cache/mod.ts"],
    ["runtime/reconcile/applier.ts", "runtime/reconcile/desired_state.ts"],
    ["runtime/manager/manager.ts", "runtime/webhooks/mod.ts"],
    ["reconcilers/status_aggregator.ts", "mod.ts"],
    ["reconcilers/status_aggregator.ts", "reconcilers/consumer_diagnosis.ts"],
  ])).toEqual([]);
});
