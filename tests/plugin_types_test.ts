/**
 * The plugin API's types catch mistakes at compile time, to the edge: the client's verbs answer
 * with their resource's type, a watch's `map` sees the watched kind, and what a plugin is handed
 * is stored (name, uid, namespace without `!`). Every `@ts-expect-error` below must meet an
 * error, or `deno check` (and so `deno test`) fails on this file: each line proves one.
 */
import { expect } from "expect";
import type { DaemonSet } from "kubernetes-types/apps/v1.d.ts";
import { MODULE, type Module } from "../crds/kmm_module.ts";
import { PTEMPLATE, type Ptemplate } from "../crds/ptemplate.ts";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import {
  DAEMON_SET,
  definePlugin,
  NODE,
  type Plugin,
  POD,
  reconcileOnce,
  type Resource,
  watch,
} from "../mod.ts";
import type { KubeClient } from "../operator.ts";

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

  definePlugin<Ptemplate, true>({
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
  // reconcileOnce's Outcome is the plugin's: its status is the Ptemplate's status type.
  const ready: number | undefined = outcome.status?.readyConsumers;
  // @ts-expect-error the Ptemplate's status has readyConsumers, not readyConsumer
  void outcome.status?.readyConsumer;
  // @ts-expect-error readyConsumers is a number, not a string
  const readyText: string | undefined = outcome.status?.readyConsumers;
  void [ready, readyText];
});

/** Never called: what it holds is checked by the compiler alone. */
async function clientTypes(client: KubeClient) {
  // A typed get is the resource's type, as stored: name, uid and namespace are there.
  const pod = await client.get(POD, "p", { namespace: "n" });
  const node: string | undefined = pod.spec?.nodeName;
  const podName: string = pod.metadata.name;
  const podNamespace: string = pod.metadata.namespace;
  // @ts-expect-error a wrong field of a Pod's spec does not compile
  void pod.spec?.nodeNam;
  // A custom kind's own type, from its Resource.
  const pt = await client.get(PTEMPLATE, "p", { namespace: "n" });
  const maxdev: number | undefined = pt.spec.maxdev;
  // @ts-expect-error the Ptemplate's field is maxdev
  void pt.spec.maxdevs;
  // Lists and watches too.
  const first: Pod | undefined = (await client.list(POD)).items[0];
  for await (const event of client.watch(DAEMON_SET)) {
    const ds: DaemonSet = event.object;
    // @ts-expect-error a DaemonSet's spec has no replicas
    void event.object.spec?.replicas;
    void ds;
  }
  // A kind whose Resource names no type is Unstructured: anything, as unknown.
  const untyped: Resource = {
    group: "x.io",
    version: "v1",
    kind: "X",
    plural: "xs",
    namespaced: true,
  };
  const x = await client.get(untyped, "x");
  const spec: unknown = x.spec;
  // @ts-expect-error an unknown field is not a string without a check
  const text: string = x.spec;
  // A cluster-scoped kind's objects have no namespace.
  const worker = await client.get(NODE, "w");
  // @ts-expect-error Nodes are cluster-scoped
  const workerNamespace: string = worker.metadata.namespace;
  void [node, podName, podNamespace, maxdev, first, spec, text, workerNamespace];
}

Deno.test("typed watches: map and filter see the watched kind, as stored", () => {
  const watches = [
    watch(POD, {
      map: (pod) => [{ namespace: pod.metadata.namespace, name: pod.spec?.nodeName ?? "" }],
      filter: (change) => change.type !== "updated" || change.object.spec !== change.old.spec,
    }),
    watch(NODE, {
      map: (node) => {
        // @ts-expect-error a Node has no namespace to map from
        const namespace: string = node.metadata.namespace;
        return [{ namespace, name: node.metadata.name }];
      },
    }),
  ];
  // @ts-expect-error a wrong field of the watched kind does not compile
  watch(POD, { map: (pod) => [{ name: pod.spec?.nodeNam ?? "" }] });
  // @ts-expect-error map says which objects of the plugin's kind, by name
  watch(POD, { map: (pod) => [pod.metadata.name] });
  const plugin = definePlugin({
    name: "watching",
    for: PTEMPLATE,
    watches,
    reconcile(pt) {
      // What reconcile gets is stored: no `!` to read its name, uid or namespace.
      const key: string = `${pt.metadata.namespace}/${pt.metadata.name} (${pt.metadata.uid})`;
      void key;
    },
  });
  expect(plugin.watches?.map((w) => w.resource.kind)).toEqual(["Pod", "Node"]);
  void clientTypes;
});
