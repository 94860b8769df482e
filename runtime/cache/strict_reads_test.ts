import { expect } from "expect";
import type { Pod } from "kubernetes-types/core/v1.d.ts";
import type { KubeObject } from "../../kube/object.ts";
import { Interner } from "./interner.ts";
import { Store } from "./store.ts";
import { strictObject, strictReader, UndeclaredReadError } from "./strict_reads.ts";

const pod = {
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name: "p", namespace: "n", uid: "u" },
  spec: { nodeName: "n1", containers: [{ name: "a", image: "i" }] },
  status: { phase: "Running", podIP: "10.0.0.1" },
} as KubeObject;
const who = {
  plugin: "watcher",
  kind: "Pod",
  projection: { fields: ["status.phase", "spec.containers[*].image"] },
};

Deno.test("declared fields read as they are; an undeclared one throws, naming it", () => {
  const view = strictObject(pod, who) as Pod;
  expect(view.metadata!.name).toBe("p");
  expect(view.status!.phase).toBe("Running");
  expect(view.spec!.containers.map((c) => c.image)).toEqual(["i"]);
  expect(() => view.status!.podIP).toThrow(UndeclaredReadError);
  expect(() => view.spec!.nodeName).toThrow(
    'plugin watcher read Pod spec.nodeName, which it does not declare: add "spec.nodeName"',
  );
  expect(() => view.spec!.containers[0].name).toThrow("spec.containers[*].name");
  // Not a field: awaiting, spreading and serializing see only what is declared.
  expect(Object.keys(view.status!)).toEqual(["phase"]);
  expect(JSON.parse(JSON.stringify(view))).toEqual({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "p", namespace: "n", uid: "u" },
    spec: { containers: [{ image: "i" }] },
    status: { phase: "Running" },
  });
  expect("podIP" in view.status!).toBe(false);
});

Deno.test("a strict reader hands out strict objects", async () => {
  const store = new Store<KubeObject>({ group: "", kind: "Pod", namespaced: true });
  store.upsert(pod);
  const reader = strictReader(store, who);
  expect((reader.get("n", "p") as Pod).status!.phase).toBe("Running");
  expect(() => (reader.list()[0] as Pod).status!.podIP).toThrow("status.podIP");
  expect(reader.get("n", "missing")).toBeUndefined();
  expect(await Promise.resolve(reader.get("n", "p"))).toBeDefined();
});

Deno.test("objects whose parts the cache shares (frozen) are checked the same way", () => {
  const shared = new Interner().intern(structuredClone(pod)) as Pod;
  expect(Object.isFrozen(shared.spec)).toBe(true);
  const view = strictObject(shared, who) as Pod;
  expect(view.status!.phase).toBe("Running");
  expect(view.spec!.containers.map((c) => c.image)).toEqual(["i"]);
  expect(() => view.spec!.nodeName).toThrow(UndeclaredReadError);
  expect(() => view.spec!.containers[0].name).toThrow("spec.containers[*].name");
  expect(Object.keys(view.spec!)).toEqual(["containers"]);
});
