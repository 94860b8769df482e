/**
 * Hot paths of the runtime, each against a reference in the same process (Deno reports the
 * ratio): the queue against a bare array, the cache against a bare Map, the "is this child up to
 * date" check against comparing JSON text, a labelled counter against a bare Map of counts.
 */
import { CONFIG_MAP } from "../kube/kinds.ts";
import type { KubeObject } from "../kube/object.ts";
import { childUpToDate, foreignFields, stampChild, WorkQueue } from "./reconcile/mod.ts";
import { Store } from "./cache/mod.ts";
import { PTEMPLATE_OPERATOR } from "./identity/mod.ts";
import { Counter } from "./observe/mod.ts";

const KEYS = Array.from({ length: 10_000 }, (_, i) => `ns-${i % 50}/object-${i}`);

Deno.bench({ name: "array push/shift, 10k keys", group: "queue", baseline: true }, () => {
  const queue: string[] = [];
  for (const key of KEYS) queue.push(key);
  while (queue.length) queue.shift();
});

Deno.bench(
  { name: "WorkQueue add/get/done, 10k keys, each added twice", group: "queue" },
  async () => {
    const queue = new WorkQueue();
    for (const key of KEYS) queue.add(key);
    for (const key of KEYS) queue.add(key);
    for (let i = 0; i < KEYS.length; i++) queue.done((await queue.get())!.key);
  },
);

const objects: KubeObject[] = KEYS.map((key, i) => {
  const [namespace, name] = key.split("/");
  return {
    metadata: {
      namespace,
      name,
      resourceVersion: String(i),
      uid: `uid-${i}`,
      ownerReferences: [{ apiVersion: "v1", kind: "X", name: "o", uid: `owner-${i % 100}` }],
    },
  };
});

Deno.bench({ name: "Map.set of 10k objects", group: "cache", baseline: true }, () => {
  const map = new Map<string, KubeObject>();
  for (const object of objects) {
    map.set(`${object.metadata!.namespace}/${object.metadata!.name}`, object);
  }
});

Deno.bench({
  name: "Store.replace of 10k objects (a relist), with the owner index",
  group: "cache",
}, () => {
  new Store<KubeObject>(CONFIG_MAP).replace(objects);
});

const parent = {
  apiVersion: "pt.example.com/v1alpha1",
  kind: "Ptemplate",
  metadata: { name: "p", namespace: "n", uid: "u" },
};
const child = {
  apiVersion: "apps/v1",
  kind: "DaemonSet",
  metadata: { name: "p-consumer", labels: { app: "p" } },
  spec: {
    selector: { matchLabels: { app: "p" } },
    template: {
      metadata: { labels: { app: "p" } },
      spec: {
        nodeSelector: { role: "worker" },
        containers: [{
          name: "consumer",
          image: "quay.io/chrisp262/pt-device-plugin:consumer-latest",
          resources: { limits: { "example.com/ptemplate": "2" } },
          volumeMounts: [{ name: "hostdev", mountPath: "/hostdev" }],
        }],
        volumes: [{ name: "hostdev", hostPath: { path: "/dev" } }],
      },
    },
  },
};
const stamped = stampChild(child, parent, "consumer-daemonset", PTEMPLATE_OPERATOR);
// As the cache holds a converged child: our entry and the DaemonSet controller's, field sets dropped.
const cached = structuredClone(stamped);
cached.metadata.managedFields = [
  { manager: "consumer-daemonset", operation: "Apply" },
  { manager: "kube-controller-manager", operation: "Update", subresource: "status" },
];
const cachedText = JSON.stringify(structuredClone(stamped));

Deno.bench(
  { name: "JSON.stringify and compare a DaemonSet", group: "up-to-date", baseline: true },
  () => {
    if (JSON.stringify(stamped) !== cachedText) throw new Error("unexpected");
  },
);

Deno.bench({ name: "childUpToDate on a DaemonSet", group: "up-to-date" }, () => {
  if (!childUpToDate(stamped, cached, PTEMPLATE_OPERATOR)) throw new Error("unexpected");
});

const ours = new Set(["consumer-daemonset"]);
Deno.bench({ name: "childUpToDate and foreignFields on a DaemonSet", group: "up-to-date" }, () => {
  if (
    !childUpToDate(stamped, cached, PTEMPLATE_OPERATOR) ||
    foreignFields(cached, stamped, { ours }).length
  ) {
    throw new Error("unexpected");
  }
});

// Twenty series of three labels, as a request counter sees them: the values are the same strings
// again and again.
const SERIES = Array.from({ length: 20 }, (_, i) => ({
  controller: `controller-${i % 4}`,
  verb: i % 2 ? "PATCH" : "POST",
  code: String(200 + (i % 5)),
}));
const SERIES_KEYS = SERIES.map((labels) => `${labels.controller}/${labels.verb}/${labels.code}`);

Deno.bench({ name: "a Map of counts, 10k counts", group: "metrics", baseline: true }, () => {
  const counts = new Map<string, { n: number }>();
  for (let i = 0; i < 10_000; i++) {
    const key = SERIES_KEYS[i % 20];
    const entry = counts.get(key);
    if (entry) entry.n++;
    else counts.set(key, { n: 1 });
  }
});

Deno.bench({ name: "Counter.inc with three labels, 10k counts", group: "metrics" }, () => {
  const counter = new Counter("requests_total", "Requests.", ["controller", "verb", "code"]);
  for (let i = 0; i < 10_000; i++) counter.inc(SERIES[i % 20]);
});
