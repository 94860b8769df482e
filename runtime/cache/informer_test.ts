/**
 * The informer's own logic, in-process, over a scripted list and watch (testdata/): what it asks
 * for, what it keeps, when it lists again and when it may be trusted. What the API server answers
 * is the integration suite's (tests/informer_test.ts and the tests that cut connections).
 */
import * as FakeTimers from "@sinonjs/fake-timers";
import { expect } from "expect";
import { ApiError } from "../../kube/errors.ts";
import { CONFIG_MAP } from "../../kube/kinds.ts";
import { NetworkError } from "../../kube/network_error.ts";
import type { KubeObject } from "../../kube/object.ts";
import { StartupError } from "../../util/startup_error.ts";
import { eventually } from "../../testing/eventually.ts";
import { log, WarningThrottle } from "../observe/mod.ts";
import { Informer } from "./informer.ts";
import { Interner } from "./interner.ts";
import type { InformerOptions } from "./informer_options.ts";
import type { StoreChange } from "./store.ts";
import { FakeListWatch } from "./testdata/fake_list_watch.ts";

/** A ConfigMap as a list answers it: no apiVersion or kind. */
function cm(name: string, resourceVersion: string, labels?: Record<string, string>): KubeObject {
  return {
    metadata: { name, namespace: "ns", uid: `uid-${name}`, resourceVersion, labels },
  } as KubeObject;
}

/** What a subscriber heard, as `type name@resourceVersion`. */
const said = (change: StoreChange<KubeObject>) =>
  `${change.type} ${change.object.metadata?.name}@${change.object.metadata?.resourceVersion}`;

const status = (code: number, name?: string) =>
  new ApiError({ code, reason: "x", message: `status ${code}`, details: name ? { name } : {} });

/** An informer over `fake`, running, with what its subscribers hear; `stop` ends it. */
function started(fake: FakeListWatch, options: Partial<InformerOptions> = {}) {
  const warnings = new WarningThrottle(log("informer-test"));
  const informer = new Informer(fake.client, CONFIG_MAP, {
    log: log("informer-test"),
    warnings,
    ...options,
  });
  const changes: string[] = [];
  informer.onChange((change) => changes.push(said(change)));
  const served: boolean[] = [];
  informer.onServedChange((value) => served.push(value));
  const controller = new AbortController();
  const running = informer.run(controller.signal);
  return {
    informer,
    changes,
    served,
    async stop() {
      controller.abort();
      await running;
      warnings.flush();
    },
  };
}

Deno.test("it lists, then watches from the list's version; each event reaches the store and the subscribers", async () => {
  const fake = new FakeListWatch();
  fake.items = [cm("a", "5")];
  fake.resourceVersion = "10";
  const { informer, changes, stop } = started(fake, { namespace: "ns" });
  try {
    await informer.synced;
    // List items come without apiVersion and kind: they are put back.
    expect(informer.store.get("ns", "a")).toMatchObject({ apiVersion: "v1", kind: "ConfigMap" });
    expect(informer.fresh).toBe(true);
    expect(fake.lists[0]).toMatchObject({ namespace: "ns", limit: 500 });
    const watch = await fake.watch(1);
    expect(watch.options).toMatchObject({ namespace: "ns", resourceVersion: "10" });
    watch.send("ADDED", cm("b", "11"));
    watch.send("MODIFIED", cm("a", "12"));
    watch.send("DELETED", cm("b", "13"));
    watch.send("BOOKMARK", { metadata: { resourceVersion: "20" } } as KubeObject);
    // The server ends the watch (its timeout): resumed from the bookmark, no list, not behind.
    watch.end();
    const resumed = await fake.watch(2);
    expect(resumed.options.resourceVersion).toBe("20");
    expect(changes).toEqual(["added a@5", "added b@11", "updated a@12", "deleted b@13"]);
    expect(informer.store.list().map((o) => o.metadata.name)).toEqual(["a"]);
    expect([fake.lists.length, informer.epoch, informer.fresh]).toEqual([1, 0, true]);
  } finally {
    await stop();
  }
});

Deno.test("a new version keeps what it has equal with the cached one: a status update leaves the rest as it was", async () => {
  const fake = new FakeListWatch();
  // The data holds a uid, so no other object shares it: kept, it is the old version's own.
  const withData = (rv: string, data: Record<string, string>) =>
    ({
      ...cm("a", rv),
      data: { id: "11111111-2222-3333-4444-555555555555", ...data },
    }) as KubeObject;
  fake.items = [withData("5", { n: "1" })];
  const { informer, stop } = started(fake, { interner: new Interner() });
  try {
    const watch = await fake.watch(1);
    const first = informer.store.get("ns", "a") as KubeObject & { data: object };
    watch.send(
      "MODIFIED",
      {
        ...withData("6", { n: "1" }),
        metadata: { ...first.metadata, resourceVersion: "6", annotations: { note: "new" } },
      } as KubeObject,
    );
    await eventually(() =>
      expect(informer.store.get("ns", "a")?.metadata.resourceVersion).toBe("6")
    );
    const next = informer.store.get("ns", "a") as KubeObject & { data: object };
    expect(next.data).toBe(first.data);
    expect(next.metadata?.annotations).toEqual({ note: "new" });
    watch.send("MODIFIED", withData("7", { n: "2" }));
    await eventually(() =>
      expect(informer.store.get("ns", "a")?.metadata.resourceVersion).toBe("7")
    );
    expect((informer.store.get("ns", "a") as KubeObject & { data: object }).data).toEqual({
      id: "11111111-2222-3333-4444-555555555555",
      n: "2",
    });
  } finally {
    await stop();
  }
});

Deno.test("410 Gone: behind, listed again at once from the new version; what went meanwhile is told", async () => {
  // No time passes: the relist needs no backoff.
  const clock = FakeTimers.install({ toFake: ["setTimeout", "clearTimeout"] });
  const fake = new FakeListWatch();
  fake.items = [cm("a", "5"), cm("b", "6")];
  const { informer, changes, stop } = started(fake);
  try {
    const watch = await fake.watch(1);
    fake.items = [cm("a", "7")];
    fake.resourceVersion = "30";
    watch.fail(status(410));
    await clock.tickAsync(0);
    expect(fake.lists.length).toBe(2);
    const next = await fake.watch(2);
    expect(next.options.resourceVersion).toBe("30");
    expect(changes).toEqual(["added a@5", "added b@6", "updated a@7", "deleted b@6"]);
    expect([fake.lists.length, informer.epoch, informer.fresh]).toEqual([2, 1, true]);
  } finally {
    await stop();
    clock.uninstall();
  }
});

Deno.test("a failed list keeps the cache behind, with the reason, until a list succeeds", async () => {
  const fake = new FakeListWatch();
  const { informer, stop } = started(fake);
  try {
    const watch = await fake.watch(1);
    // The second list fails at once; the third, after the backoff, waits for the test.
    fake.failList(new Error("connection refused"));
    fake.holdList()();
    const third = fake.holdList();
    watch.fail(status(410));
    await fake.listed(3);
    expect(informer.fresh).toBe(false);
    expect(informer.behind?.reason).toBe("listing failed: connection refused");
    third();
    await fake.watch(2);
    // Fresh again, and the fall counted once.
    expect([fake.lists.length, informer.epoch, informer.fresh]).toEqual([3, 1, true]);
  } finally {
    await stop();
  }
});

Deno.test("a watch that goes silent is given up: behind, and listed again", async () => {
  const fake = new FakeListWatch();
  const { informer, stop } = started(fake, { silenceTimeoutMs: 50 });
  try {
    const silent = await fake.watch(1);
    await fake.watch(2);
    expect(silent.closed).toBe(true);
    expect(fake.lists.length).toBe(2);
    expect(informer.epoch).toBe(1);
    expect(informer.fresh).toBe(true);
  } finally {
    await stop();
  }
});

Deno.test("recheck: behind at once, the watch ended and the kind listed again; then fresh", async () => {
  const fake = new FakeListWatch();
  const { informer, stop } = started(fake);
  try {
    const watch = await fake.watch(1);
    informer.recheck("a write was refused: 404");
    expect(informer.fresh).toBe(false);
    expect(informer.behind?.reason).toBe("a write was refused: 404");
    await fake.watch(2);
    expect(watch.closed).toBe(true);
    expect([fake.lists.length, informer.epoch, informer.fresh]).toEqual([2, 1, true]);
  } finally {
    await stop();
  }
});

Deno.test("a list that began before a recheck does not count as its answer: another list follows", async () => {
  const fake = new FakeListWatch();
  const { informer, stop } = started(fake);
  try {
    const watch = await fake.watch(1);
    const second = fake.holdList();
    informer.recheck("first");
    await fake.listed(2);
    // Asked again while the second list is under way: its answer is too old to trust.
    informer.recheck("second");
    const third = fake.holdList();
    second();
    await fake.listed(3);
    expect(informer.fresh).toBe(false);
    expect(informer.behind?.reason).toBe("second");
    third();
    await fake.watch(2);
    expect(watch.closed).toBe(true);
    expect(informer.fresh).toBe(true);
    expect(informer.epoch).toBe(1);
  } finally {
    await stop();
  }
});

Deno.test("a kind not served is an empty cache, synced and fresh, looked for again until it is", async () => {
  const fake = new FakeListWatch();
  fake.failList(status(404));
  fake.items = [cm("a", "5")];
  const { informer, served, changes, stop } = started(fake, { missingKindRetryMs: 10 });
  try {
    await informer.synced;
    await fake.listed(2);
    await eventually(() => expect(informer.installed).toBe(true));
    expect(served).toEqual([true]);
    expect(changes).toEqual(["added a@5"]);
    // Its CRD deleted while watched: the watch is refused, a list says the kind is gone.
    const watch = await fake.watch(1);
    fake.listError = status(404);
    watch.fail(status(404));
    await eventually(() => expect(served).toEqual([true, false]));
    expect(informer.installed).toBe(false);
    expect(informer.unavailable).toBe("not served");
    expect(changes).toEqual(["added a@5", "deleted a@5"]);
    expect(informer.fresh).toBe(true);
    // Served again (its CRD back): found at the next look.
    fake.listError = undefined;
    await eventually(() => expect(served).toEqual([true, false, true]));
    expect(changes).toEqual(["added a@5", "deleted a@5", "added a@5"]);
  } finally {
    await stop();
  }
});

Deno.test("not allowed to list a kind the plugins need: synced rejects with the rule to grant", async () => {
  const fake = new FakeListWatch();
  fake.failList(status(403));
  const { informer, stop } = started(fake, { namespace: "ns" });
  try {
    const refused = await informer.synced.then(() => undefined, (error) => error);
    expect(refused).toBeInstanceOf(StartupError);
    expect(refused.message).toContain("status 403");
    expect(refused.message).toContain("configmaps");
    expect(refused.message).toContain("list");
    expect(refused.message).toContain("watch");
    expect(fake.lists.length).toBe(1);
  } finally {
    await stop();
  }
});

Deno.test("not allowed to list an optional kind: unavailable, empty and fresh, not stuck", async () => {
  const fake = new FakeListWatch();
  fake.failList(status(403));
  const { informer, stop } = started(fake, { optional: true, missingKindRetryMs: 60_000 });
  try {
    await informer.synced;
    expect(informer.unavailable).toBe("not allowed");
    expect(informer.fresh).toBe(true);
    expect(informer.store.size).toBe(0);
  } finally {
    await stop();
  }
});

Deno.test("our write's answer is in the cache at once; the watch's copy of it is no news", async () => {
  const fake = new FakeListWatch();
  fake.items = [cm("a", "5")];
  const { informer, changes, stop } = started(fake, { namespace: "ns" });
  try {
    const watch = await fake.watch(1);
    informer.observe({ ...cm("a", "40"), apiVersion: "v1", kind: "ConfigMap" });
    // Another namespace's object is not this cache's; an older answer changes nothing.
    informer.observe({ ...cm("a", "41"), metadata: { ...cm("a", "41").metadata, namespace: "x" } });
    informer.observe({ ...cm("a", "39"), apiVersion: "v1", kind: "ConfigMap" });
    watch.send("MODIFIED", cm("a", "40"));
    watch.send("MODIFIED", cm("a", "42"));
    watch.end();
    await fake.watch(2);
    expect(changes).toEqual(["added a@5", "updated a@40", "updated a@42"]);
  } finally {
    await stop();
  }
});

Deno.test("a part asks for its own and keeps its own: an object that leaves it is gone from it", async () => {
  const fake = new FakeListWatch();
  const mine = { shard: "1" };
  fake.items = [cm("a", "5", mine), cm("other", "6", { shard: "2" })];
  const { informer, changes, stop } = started(fake, {
    part: {
      shard: 1,
      query: () => ({ labelSelector: "shard=1" }),
      keeps: (object) => object.metadata?.labels?.shard === "1",
    },
  });
  try {
    const watch = await fake.watch(1);
    // The server did not narrow the list as asked: what is not the part's is dropped anyway.
    expect(fake.lists[0].labelSelector).toBe("shard=1");
    expect(watch.options.labelSelector).toBe("shard=1");
    watch.send("ADDED", cm("b", "7", mine));
    watch.send("MODIFIED", cm("a", "8", { shard: "2" }));
    watch.end();
    await fake.watch(2);
    expect(changes).toEqual(["added a@5", "added b@7", "deleted a@8"]);
    expect(informer.shard).toBe(1);
    // Handed on: emptied, each object told, and rightly empty.
    informer.clear();
    expect(changes.at(-1)).toBe("deleted b@7");
    expect(informer.fresh).toBe(true);
  } finally {
    await stop();
  }
});

Deno.test("after a network failure it waits out its backoff, unless the API server is heard again", async () => {
  const clock = FakeTimers.install({ toFake: ["setTimeout", "clearTimeout"] });
  const fake = new FakeListWatch();
  const { informer, stop } = started(fake);
  try {
    const watch = await fake.watch(1);
    watch.fail(new NetworkError("reset", "connection reset by peer"));
    await clock.tickAsync(0);
    expect(informer.behind?.reason).toBe("its watch failed: connection reset by peer");
    // The first backoff is at least 400 ms: nothing before that.
    await clock.tickAsync(390);
    expect(fake.lists.length).toBe(1);
    informer.nudge();
    await clock.tickAsync(0);
    expect(fake.lists.length).toBe(2);
    await fake.watch(2);
    expect(informer.fresh).toBe(true);
  } finally {
    await stop();
    clock.uninstall();
  }
});

Deno.test("a skipped kind never lists: empty, synced, fresh, and says it is not watched", async () => {
  const fake = new FakeListWatch();
  const { informer, stop } = started(fake, { skipped: true });
  try {
    await informer.synced;
    expect(informer.unavailable).toBe("not watched");
    expect(informer.fresh).toBe(true);
    informer.recheck("ignored");
    expect(informer.fresh).toBe(true);
    expect(fake.lists.length).toBe(0);
  } finally {
    await stop();
  }
});
