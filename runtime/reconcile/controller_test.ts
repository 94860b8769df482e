import { expect } from "expect";
import type { KubeClient } from "../../kube/client.ts";
import { CONFIG_MAP, NODE } from "../../kube/kinds.ts";
import type { KubeObject } from "../../kube/object.ts";
import type { Resource } from "../../kube/resource.ts";
import { PTEMPLATE_OPERATOR } from "../identity/mod.ts";
import { log, Registry } from "../observe/mod.ts";
import { definePlugin, type Plugin } from "../plugin/mod.ts";
import { ChildProblems } from "./child_problems.ts";
import { Controller } from "./controller.ts";
import { ControllerMetrics } from "./controller_metrics.ts";
import { FakePool } from "./testdata/fake_pool.ts";
import { WriteLoopGuard } from "./write_loop_guard.ts";
import type { Informer } from "../cache/mod.ts";
import { StaleCacheError } from "../cache/mod.ts";
import { controllerKeys } from "./change_routes.ts";
import { freshnessFence } from "./visitor.ts";
import { eventually } from "../../testing/eventually.ts";

const PARENT = {
  group: "x.example.com",
  version: "v1",
  kind: "Parent",
  plural: "parents",
  namespaced: true,
};
const owner = (kind: string, apiVersion: string, controller?: boolean) => ({
  apiVersion,
  kind,
  name: `${kind.toLowerCase()}-1`,
  uid: "u",
  controller,
});

Deno.test("a child's change reconciles the parent its controller reference names", () => {
  const child = (...ownerReferences: ReturnType<typeof owner>[]) => ({
    metadata: { name: "c", namespace: "ns", ownerReferences },
  });
  expect(controllerKeys(child(owner("Parent", "x.example.com/v1", true)), PARENT)).toEqual([
    "Parent.x.example.com/ns/parent-1",
  ]);
  // Only the controller, of this kind and API version.
  expect(controllerKeys(child(owner("Parent", "x.example.com/v1")), PARENT)).toEqual([]);
  expect(controllerKeys(child(owner("Parent", "x.example.com/v2", true)), PARENT)).toEqual([]);
  expect(controllerKeys(child(owner("Other", "x.example.com/v1", true)), PARENT)).toEqual([]);
  expect(controllerKeys({ metadata: { name: "c" } }, PARENT)).toEqual([]);
  // A cluster-scoped parent has no namespace in its key.
  expect(controllerKeys(child(owner("Node", "v1", true)), NODE)).toEqual(["Node/node-1"]);
});

Deno.test("the freshness fence refuses a write once a cache it read has fallen behind", () => {
  const cache = (fresh = true, epoch = 0) =>
    ({ fresh, epoch, resource: CONFIG_MAP, namespace: "ns" }) as unknown as Informer & {
      fresh: boolean;
      epoch: number;
    };
  const declared = cache();
  const { fence } = freshnessFence([declared]);
  expect(() => fence()).not.toThrow();
  // Fell behind and listed again meanwhile: what was read before is of another epoch.
  declared.epoch = 1;
  expect(() => fence()).toThrow(StaleCacheError);
  // A cache read on demand counts from when it was read.
  const later = cache(true, 7);
  const second = freshnessFence([]);
  second.read(later);
  expect(() => second.fence()).not.toThrow();
  later.fresh = false;
  expect(() => second.fence()).toThrow(/is behind the API server/);
});

// The controller itself, against caches held in memory (testdata/fake_pool.ts): what it visits,
// in what order, and what it keeps about each key. A plugin here writes nothing, so no client is
// needed; what the applier writes is tested against the real API server.

const THING: Resource<ConfigMap, true> = { ...CONFIG_MAP, kind: "ConfigMap" };
type ConfigMap = KubeObject & { data?: Record<string, string> };

/** A controller of `plugin` over a FakePool, running until the test ends. */
function controllerOf(plugin: Plugin<ConfigMap>) {
  const pool = new FakePool();
  const events: string[] = [];
  // Visits write nothing; a client is asked only to fence what it would write.
  const client = { fenced: () => client, observed: () => client } as unknown as KubeClient;
  const controller = new Controller(plugin, {
    operator: PTEMPLATE_OPERATOR,
    client,
    pool,
    metrics: new ControllerMetrics(new Registry()),
    events: { record: (_, event) => events.push(event.reason) },
    log: log("controller-test"),
    problems: new ChildProblems(),
    guard: new WriteLoopGuard(),
  });
  const stop = new AbortController();
  const abort = new AbortController();
  const running = controller.run(stop.signal, abort.signal);
  return {
    controller,
    pool,
    events,
    put: (name: string, data: Record<string, string> = {}, metadata = {}) =>
      pool.put(THING, { metadata: { name, namespace: "ns", ...metadata }, data } as ConfigMap),
    remove: (name: string) => pool.remove(THING, { metadata: { name, namespace: "ns" } }),
    async stop() {
      stop.abort();
      await running;
    },
  };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

Deno.test("controller: a change visits its object; ten changes before a worker comes, one visit", async () => {
  const visits: string[] = [];
  let release!: () => void;
  const gate = new Promise<void>((resolve) => release = resolve);
  const c = controllerOf(definePlugin({
    name: "counter",
    for: THING,
    writesStatus: false,
    reconcile: async (cm) => {
      visits.push(`${cm.metadata.name}:${cm.data?.n}`);
      if (cm.metadata.name === "hold") await gate;
    },
  }));
  c.put("hold");
  await eventually(() => expect(visits).toEqual(["hold:undefined"]));
  // The one worker is busy: these pile up and fold into one visit with the latest state.
  for (let n = 0; n < 10; n++) c.put("a", { n: String(n) });
  release();
  await eventually(() => expect(visits.length).toBeGreaterThanOrEqual(2));
  await settle();
  expect(visits).toEqual(["hold:undefined", "a:9"]);
  await c.stop();
});

Deno.test("controller: edits go before a start's backlog, which still drains", async () => {
  const visits: string[] = [];
  let begun!: () => void;
  const backlogBegun = new Promise<void>((resolve) => begun = resolve);
  const c = controllerOf(definePlugin({
    name: "slow",
    for: THING,
    writesStatus: false,
    reconcile: async (cm) => {
      visits.push(cm.metadata.name);
      begun();
      await new Promise((resolve) => setTimeout(resolve, 2));
    },
  }));
  await c.stop();
  // Objects already cached when it starts to lead: bulk work.
  for (let i = 0; i < 30; i++) c.put(`old-${i}`);
  const stop = new AbortController();
  const running = c.controller.run(stop.signal, new AbortController().signal);
  // The edit comes once the backlog is under way, however slowly this machine gets there.
  await backlogBegun;
  c.put("edited", { changed: "yes" });
  await eventually(() => expect(visits.length).toBe(31));
  stop.abort();
  await running;
  expect(visits.indexOf("edited")).toBeLessThan(5);
  // Every bulk key was visited too.
  expect(visits.filter((name) => name.startsWith("old-")).length).toBe(30);
});

Deno.test("controller: a failure is retried after its backoff; a requeue comes back", async () => {
  let calls = 0;
  const c = controllerOf(definePlugin({
    name: "flaky",
    for: THING,
    writesStatus: false,
    reconcile: () => {
      calls++;
      if (calls === 1) throw new Error("not yet");
      if (calls === 2) return { requeueAfterMs: 10 };
    },
  }));
  c.put("a");
  await eventually(() => expect(calls).toBe(3));
  await settle();
  expect(calls).toBe(3);
  await c.stop();
});

Deno.test("controller: a deleted object's plugin is told, once", async () => {
  const deleted: string[] = [];
  const c = controllerOf(definePlugin({
    name: "forgetful",
    for: THING,
    writesStatus: false,
    reconcile: () => {},
    onDeleted: (ref) => void deleted.push(ref.name),
  }));
  c.put("a");
  await settle();
  c.remove("a");
  await eventually(() => expect(deleted.length).toBe(1));
  await settle();
  expect(deleted).toEqual(["a"]);
  await c.stop();
});

Deno.test("controller: a plugin's debounce folds a burst into one visit", async () => {
  const visits: string[] = [];
  const c = controllerOf(definePlugin({
    name: "debounced",
    for: THING,
    writesStatus: false,
    debounceMs: 30,
    reconcile: (cm) => void visits.push(cm.data?.n ?? ""),
  }));
  for (let n = 0; n < 5; n++) c.put("a", { n: String(n) });
  await eventually(() => expect(visits.length).toBe(1));
  await new Promise((resolve) => setTimeout(resolve, 50));
  expect(visits).toEqual(["4"]);
  await c.stop();
});

Deno.test("controller: reconciles that keep passing their deadline are put aside until a change", async () => {
  let calls = 0;
  const c = controllerOf(definePlugin({
    name: "hangs",
    for: THING,
    writesStatus: false,
    reconcileTimeoutMs: 5,
    reconcile: async (cm) => {
      calls++;
      if (cm.data?.fixed !== "yes") await new Promise((resolve) => setTimeout(resolve, 30));
    },
  }));
  c.put("a", {}, { generation: 1 });
  await eventually(() => expect(c.events).toContain("ReconcileQuarantined"));
  await settle();
  // Three in a row past the deadline, each an Event: then quarantined, and not visited again.
  expect(calls).toBe(3);
  expect(c.events).toEqual([
    "ReconcileError",
    "ReconcileError",
    "ReconcileError",
    "ReconcileQuarantined",
  ]);
  // A new generation releases it.
  c.put("a", { fixed: "yes" }, { generation: 2 });
  await eventually(() => expect(calls).toBe(4));
  await c.stop();
});

Deno.test("controller: each visit is recorded for explain, with its causes and what came next", async () => {
  let calls = 0;
  const c = controllerOf(definePlugin({
    name: "recorded",
    for: THING,
    writesStatus: false,
    reconcile: () => {
      if (++calls === 1) throw new Error("not yet");
      return { requeueAfterMs: 60_000 };
    },
  }));
  c.put("a", { n: "1" });
  await eventually(() => expect(c.controller.history.of(`ConfigMap/ns/a`).length).toBe(2));
  const visits = c.controller.history.of(
    `ConfigMap/ns/a`,
  );
  expect(visits.map((v) => v.outcome)).toEqual(["failed", "reconciled"]);
  expect(visits[0]).toMatchObject({
    causes: ["created ConfigMap ns/a (created)"],
    priority: "edit",
    error: "not yet",
    next: expect.stringMatching(/^retry in \d+ ms \(failure 1 in a row\)$/),
  });
  expect(visits[1]).toMatchObject({ causes: ["retry"], next: "again in 60 s" });
  await c.stop();
});

Deno.test("controller: changes that come one at a time are visited without a turn given after each", async () => {
  let visits = 0;
  const c = controllerOf(definePlugin({
    name: "alone",
    for: THING,
    writesStatus: false,
    reconcile: () => {
      visits++;
    },
  }));
  // The timers that give the event loop a turn are set in util/next_turn.ts: count those.
  const setTimer = globalThis.setTimeout;
  let turnTimers = 0;
  globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
    if (new Error().stack?.includes("next_turn.ts")) turnTimers++;
    return setTimer(...args);
  }) as typeof setTimeout;
  try {
    for (let i = 0; i < 10; i++) {
      // Longer than a turn's budget: the thread idles between changes, as in a quiet cluster.
      await new Promise((resolve) => setTimer(resolve, 30));
      c.put(`k${i}`);
      await eventually(() => expect(visits).toBe(i + 1));
    }
  } finally {
    globalThis.setTimeout = setTimer;
  }
  expect(turnTimers).toBe(0);
  await c.stop();
});

Deno.test("controller: visits that ask to come back at once, on two workers, still let the event loop turn", async () => {
  // Each visit's key is handed to the other worker as soon as it is done: a chain of promises
  // that never waits for I/O unless the workers give a turn.
  let visits = 0;
  let timerRan = false;
  const c = controllerOf(definePlugin({
    name: "again",
    for: THING,
    writesStatus: false,
    concurrency: 2,
    reconcile: () => {
      visits++;
      return timerRan || visits >= 200_000 ? {} : { requeueAfterMs: 0 };
    },
  }));
  setTimeout(() => timerRan = true, 0);
  c.put("k");
  await eventually(() => expect(timerRan || visits >= 200_000).toBe(true));
  expect({ timerRan, beforeTheCap: visits < 200_000 }).toEqual({
    timerRan: true,
    beforeTheCap: true,
  });
  await c.stop();
});

Deno.test("controller: a backlog of visits that wait for nothing lets the event loop turn between them", async () => {
  let visits = 0;
  const c = controllerOf(definePlugin({
    name: "quick",
    for: THING,
    writesStatus: false,
    reconcile: () => {
      visits++;
    },
  }));
  for (let i = 0; i < 2000; i++) c.put(`k${i}`);
  // What a watch event's arrival is to the thread: a task that needs a turn of the event loop.
  let visitsWhenTheTimerRan: number | undefined;
  setTimeout(() => visitsWhenTheTimerRan = visits, 0);
  await eventually(() => expect(visits).toBe(2000));
  expect(visitsWhenTheTimerRan).toBeLessThan(2000);
  await c.stop();
});
