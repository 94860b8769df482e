/**
 * The plugin API's types catch mistakes at compile time. Every `@ts-expect-error` below must meet
 * an error, or `deno check` (and so `deno test`) fails on this file: each line proves one.
 */
import { expect } from "expect";
import type { DaemonSet } from "kubernetes-types/apps/v1.d.ts";
import { MODULE, type Module } from "../crds/kmm_module.ts";
import { PTEMPLATE, type Ptemplate } from "../crds/ptemplate.ts";
import { DAEMON_SET, definePlugin, type Plugin } from "../mod.ts";
import { reconcileOnce } from "../testing/reconcile_once.ts";

Deno.test("typed resources: objects, cache reads, children and status are checked", async () => {
  const plugin = definePlugin({
    name: "typed",
    for: PTEMPLATE,
    owns: [DAEMON_SET],
    reconcile(pt, { cache }) {
      // The object's type comes from `for`: no annotation, no cast.
      const selector: Record<string, string> | undefined = pt.spec.selector;
      // A cache read is typed by its resource.
      const ds: DaemonSet | undefined = cache(DAEMON_SET).get("n", "x");
      // @ts-expect-error a DaemonSet read is not a Module
      const wrong: Module | undefined = cache(DAEMON_SET).get("n", "x");
      void [selector, ds, wrong];
      return { status: { readyConsumers: 1 } };
    },
  });

  definePlugin({
    name: "bad-status",
    for: PTEMPLATE,
    // @ts-expect-error readyConsumers is a number in the Ptemplate's status
    reconcile: () => ({ status: { readyConsumers: "one" } }),
  });

  definePlugin({
    name: "bad-child",
    for: PTEMPLATE,
    // @ts-expect-error a child is a Kubernetes object, not a name
    reconcile: () => ({ children: ["pt-consumer"] }),
  });

  definePlugin<Ptemplate>({
    name: "bad-for",
    // @ts-expect-error a plugin for Ptemplates cannot be `for` Modules
    for: MODULE,
    reconcile: () => {},
  });

  // Any typed plugin is a Plugin, what the manager takes: no casts.
  const plugins: Plugin[] = [plugin];
  expect(plugins).toHaveLength(1);
  const { outcome } = await reconcileOnce(plugin, {
    apiVersion: "pt.example.com/v1alpha1",
    kind: "Ptemplate",
    metadata: { name: "p", namespace: "n" },
    spec: { selector: { a: "b" } },
  });
  expect(outcome.status?.readyConsumers).toBe(1);
});
