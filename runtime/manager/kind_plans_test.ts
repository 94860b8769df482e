import { expect } from "expect";
import { CONFIG_MAP, DAEMON_SET, NODE, POD, SECRET } from "../../kube/kinds.ts";
import { definePlugin, reads, watch } from "../plugin/mod.ts";
import { kindSharding, projections } from "./kind_plans.ts";

const parent = definePlugin({
  name: "parent",
  for: CONFIG_MAP,
  owns: [DAEMON_SET],
  watches: [
    watch(POD, { map: () => [], shardKey: (pod) => pod.metadata.labels?.["uid"] }),
    watch(NODE, { map: () => [] }),
  ],
  reads: [reads(POD, ["status.phase"]), reads(DAEMON_SET, ["status"])],
  reconcile: () => {},
});

Deno.test("kinds follow the shards: own kind by uid, children by parent, keyed watches by key", () => {
  const plan = kindSharding([parent], "example.com/bucket");
  expect(plan(CONFIG_MAP)).toEqual({ by: "uid" });
  expect(plan(DAEMON_SET)).toMatchObject({ by: "controller", label: "example.com/bucket" });
  expect(plan(POD)).toMatchObject({ by: "key" });
  // Nodes (no key) and kinds nobody uses are kept whole.
  expect(plan(NODE)).toBeUndefined();
  expect(plan(SECRET)).toBeUndefined();
});

Deno.test("a kind one plugin owns and another reconciles, or watched unkeyed, is kept whole", () => {
  const child = definePlugin({ name: "child", for: DAEMON_SET, reconcile: () => {} });
  const unkeyed = definePlugin({
    name: "unkeyed",
    for: SECRET,
    watches: [watch(POD, { map: () => [] })],
    reconcile: () => {},
  });
  const plan = kindSharding([parent, child, unkeyed], "example.com/bucket");
  expect(plan(DAEMON_SET)).toBeUndefined();
  expect(plan(POD)).toBeUndefined();
});

Deno.test("caches keep the union of what their users read; whole when one declared nothing", () => {
  const plan = projections([parent]);
  expect(plan(POD)).toEqual({ fields: ["status.phase"], managed: false });
  expect(plan(DAEMON_SET)).toEqual({ fields: ["status"], managed: true });
  // The plugin's own kind: it declared nothing of it, so it is kept whole.
  expect(plan(CONFIG_MAP)).toBeUndefined();
  expect(plan(SECRET)).toBeUndefined();
  const podsWhole = definePlugin({
    name: "whole",
    for: SECRET,
    watches: [watch(POD, { map: () => [] })],
    reconcile: () => {},
  });
  expect(projections([parent, podsWhole])(POD)).toBeUndefined();
});
