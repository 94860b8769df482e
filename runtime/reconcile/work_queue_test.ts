import * as FakeTimers from "@sinonjs/fake-timers";
import { expect } from "expect";
import fc from "fast-check";
import { cause } from "./cause.ts";
import { EDITS_PER_BULK, EDITS_RECENT_MS, WorkQueue } from "./work_queue.ts";

type Clock = ReturnType<typeof FakeTimers.install>;

function withClock(fn: (clock: Clock) => Promise<void>): () => Promise<void> {
  return async () => {
    const clock = FakeTimers.install({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    try {
      await fn(clock);
    } finally {
      clock.uninstall();
    }
  };
}

Deno.test("repeated adds of a waiting key collapse into one visit", async () => {
  const queue = new WorkQueue();
  queue.add("a");
  queue.add("b");
  queue.add("a");
  queue.add("a");
  expect(queue.length).toBe(2);
  expect((await queue.get())?.key).toBe("a");
  expect((await queue.get())?.key).toBe("b");
  expect(queue.length).toBe(0);
});

Deno.test("a key in flight is never handed out twice; re-added, it comes back after done", async () => {
  const queue = new WorkQueue();
  queue.add("a");
  const key = (await queue.get())?.key;
  queue.add("a");
  let second: string | undefined | null = null;
  queue.get().then((k) => (second = k?.key));
  await Promise.resolve();
  expect(second).toBeNull();
  queue.done(key!);
  await Promise.resolve();
  expect(second).toBe("a");
});

Deno.test(
  "quiet: no key waits and none is in hand; a delayed one does not count, one handed on does",
  withClock(async (clock) => {
    const queue = new WorkQueue();
    expect(queue.quiet).toBe(true);
    queue.addAfter("later", 100);
    expect(queue.quiet).toBe(true);
    queue.add("a");
    expect(queue.quiet).toBe(false);
    const taken = await queue.get();
    expect(queue.quiet).toBe(false);
    // Re-added in flight, then done while another worker waits: handed to it at once.
    queue.add("a");
    const next = queue.get();
    queue.done(taken!.key);
    expect(queue.quiet).toBe(false);
    queue.done((await next)!.key);
    expect(queue.quiet).toBe(true);
    await clock.tickAsync(100);
    expect(queue.quiet).toBe(false);
  }),
);

Deno.test("failures back off per key: 5 ms doubling to 1000 s, reset by forget", () => {
  const queue = new WorkQueue();
  const delays = Array.from({ length: 22 }, () => queue.addRateLimited("a"));
  expect(delays.slice(0, 5)).toEqual([5, 10, 20, 40, 80]);
  expect(delays.at(-1)).toBe(1_000_000);
  expect(Math.max(...delays)).toBe(1_000_000);
  expect(queue.addRateLimited("b")).toBe(5);
  queue.forget("a");
  expect(queue.addRateLimited("a")).toBe(5);
  queue.shutDown();
});

Deno.test(
  "addAfter: a plain delay, and the earliest scheduled visit wins",
  withClock(async (clock) => {
    const queue = new WorkQueue();
    queue.addAfter("a", 1000);
    queue.addAfter("a", 100);
    queue.addAfter("b", 50);
    queue.addAfter("b", 500);
    await clock.tickAsync(49);
    expect(queue.length).toBe(0);
    await clock.tickAsync(1);
    expect(queue.length).toBe(1);
    await clock.tickAsync(50);
    expect(queue.length).toBe(2);
    await clock.tickAsync(2000);
    expect(queue.length).toBe(2); // the later schedules were dropped, not kept as extra visits
    expect([(await queue.get())?.key, (await queue.get())?.key]).toEqual(["b", "a"]);
  }),
);

Deno.test(
  "a failing key is retried after its backoff and not before",
  withClock(async (clock) => {
    const queue = new WorkQueue();
    queue.add("k");
    for (const expected of [5, 10, 20, 40]) {
      const key = (await queue.get())?.key;
      queue.done(key!);
      expect(queue.addRateLimited(key!)).toBe(expected);
      await clock.tickAsync(expected - 1);
      expect(queue.length).toBe(0);
      await clock.tickAsync(1);
      expect(queue.length).toBe(1);
    }
  }),
);

Deno.test("shutDown releases waiting workers and drops pending work", async () => {
  const queue = new WorkQueue();
  const waiting = queue.get();
  queue.addAfter("later", 10_000);
  queue.shutDown();
  expect(await waiting).toBeUndefined();
  expect(queue.idle).toBe(true);
  queue.add("x");
  expect(await queue.get()).toBeUndefined();
});

Deno.test("property: any interleaving of adds and workers never runs a key twice at once and loses no add", async () => {
  const op = fc.oneof(
    fc.record({ kind: fc.constant("add" as const), key: fc.constantFrom("a", "b", "c", "d") }),
    fc.record({ kind: fc.constant("take" as const), worker: fc.nat(2) }),
    fc.record({ kind: fc.constant("finish" as const), worker: fc.nat(2) }),
  );
  await fc.assert(
    fc.asyncProperty(fc.array(op, { maxLength: 60 }), async (ops) => {
      const queue = new WorkQueue();
      const holding: (string | undefined)[] = [undefined, undefined, undefined];
      // A key added at any time must be visited by a take that starts after that add.
      const owed = new Set<string>();
      let adds = 0;
      let visits = 0;
      const take = async (worker: number) => {
        if (holding[worker] !== undefined || queue.length === 0) return;
        const key = (await queue.get())!.key;
        expect(holding).not.toContain(key);
        holding[worker] = key;
        owed.delete(key);
        visits++;
      };
      for (const step of ops) {
        if (step.kind === "add") {
          queue.add(step.key);
          owed.add(step.key);
          adds++;
        } else if (step.kind === "take") {
          await take(step.worker);
        } else if (holding[step.worker] !== undefined) {
          queue.done(holding[step.worker]!);
          holding[step.worker] = undefined;
        }
      }
      // Drain: finish everything, then take until empty.
      for (;;) {
        for (let w = 0; w < 3; w++) {
          if (holding[w] !== undefined) {
            queue.done(holding[w]!);
            holding[w] = undefined;
          }
        }
        if (queue.length === 0) break;
        await take(0);
      }
      expect([...owed]).toEqual([]);
      expect(visits).toBeLessThanOrEqual(adds);
      expect(queue.idle).toBe(true);
    }),
  );
});

Deno.test("keys come out in the order they were first added, through any adds and takes", async () => {
  await fc.assert(fc.asyncProperty(
    fc.array(fc.oneof(fc.nat(30).map((n) => `k${n}`), fc.constant(null)), { maxLength: 300 }),
    async (steps) => {
      const queue = new WorkQueue();
      const model: string[] = [];
      for (const step of steps) {
        if (step === null) {
          if (!model.length) continue;
          const key = (await queue.get())?.key;
          expect(key).toBe(model.shift());
          queue.done(key!);
        } else {
          queue.add(step);
          if (!model.includes(step)) model.push(step);
        }
        expect(queue.length).toBe(model.length);
      }
    },
  ));
});

Deno.test("edits go first: a key added for a change passes the bulk backlog", async () => {
  const queue = new WorkQueue();
  for (let i = 0; i < 100; i++) queue.add(`bulk-${i}`, cause("start"));
  queue.add("edited", cause("updated", { object: "Ptemplate ns/edited", change: "spec" }));
  expect([queue.depth("edit"), queue.depth("bulk")]).toEqual([1, 100]);
  const first = await queue.get();
  expect(first).toMatchObject({ key: "edited", priority: "edit" });
  expect(first?.causes.list).toEqual([
    expect.objectContaining({ kind: "updated", change: "spec" }),
  ]);
  expect((await queue.get())?.key).toBe("bulk-0");
});

Deno.test("a waiting bulk key moves up when an edit comes for it, and is visited once", async () => {
  const queue = new WorkQueue();
  queue.add("a", cause("resync"));
  queue.add("b", cause("resync"));
  queue.add("b", cause("child", { object: "DaemonSet ns/b-consumer", change: "status" }));
  const first = await queue.get();
  expect(first).toMatchObject({ key: "b", priority: "edit" });
  // Both causes are told; the visit is one.
  expect(first?.causes.list.map((c) => c.kind)).toEqual(["resync", "child"]);
  queue.done("b");
  expect((await queue.get())?.key).toBe("a");
  expect(queue.length).toBe(0);
  expect(queue.idle).toBe(false); // a is in flight
  queue.done("a");
  expect(queue.idle).toBe(true);
});

Deno.test(
  "a bulk key moved up by an edit waited, as an edit, since the edit came",
  withClock(async (clock) => {
    const waited: [number, string][] = [];
    const queue = new WorkQueue({ observer: { waited: (s, lane) => waited.push([s, lane]) } });
    queue.add("a", cause("start"));
    clock.tick(5_000);
    queue.add("a", cause("updated", { change: "spec" }));
    clock.tick(200);
    expect(await queue.get()).toMatchObject({ key: "a", priority: "edit", waitedMs: 200 });
    expect(waited).toEqual([[0.2, "edit"]]);
  }),
);

Deno.test("bulk work is never starved: one bulk key after every run of edits", async () => {
  const queue = new WorkQueue();
  for (let i = 0; i < 3; i++) queue.add(`bulk-${i}`, cause("requeue"));
  for (let i = 0; i < 20; i++) queue.add(`edit-${i}`, cause("created"));
  const order: string[] = [];
  while (queue.length) {
    const taken = (await queue.get())!;
    order.push(taken.key);
    queue.done(taken.key);
  }
  // Within each lane, first come first served.
  expect(order.filter((k) => k.startsWith("edit"))).toEqual(
    Array.from({ length: 20 }, (_, i) => `edit-${i}`),
  );
  expect(order.indexOf("bulk-0")).toBe(EDITS_PER_BULK);
  expect(order.indexOf("bulk-1")).toBe(2 * EDITS_PER_BULK + 1);
});

Deno.test("a key re-added while in flight comes back in its highest lane", async () => {
  const queue = new WorkQueue();
  queue.add("a", cause("start"));
  const taken = (await queue.get())!;
  queue.add("a", cause("requeue"));
  queue.add("a", cause("child"));
  queue.add("z", cause("start"));
  queue.done(taken.key);
  const again = (await queue.get())!;
  expect(again).toMatchObject({ key: "a", priority: "edit" });
  expect(again.causes.list.map((c) => c.kind)).toEqual(["requeue", "child"]);
});

Deno.test(
  "causes seen within a debounce are told with the visit; a retry keeps its lane",
  withClock(async (clock) => {
    const queue = new WorkQueue();
    queue.addAfter("a", 300, cause("child", { change: "status" }));
    queue.addAfter("a", 300, cause("child", { change: "created" }));
    await clock.tickAsync(300);
    const taken = (await queue.get())!;
    expect(taken.causes.list.map((c) => c.change)).toEqual(["status", "created"]);
    queue.done("a");
    // Its visit failed: back it comes after the backoff, in the same lane.
    queue.addRateLimited("a", { ...cause("retry"), priority: "bulk" });
    await clock.tickAsync(5);
    expect([queue.depth("edit"), queue.depth("bulk")]).toEqual([0, 1]);
  }),
);

Deno.test("a key's causes are bounded however many changes come before its visit", async () => {
  const queue = new WorkQueue();
  for (let i = 0; i < 1000; i++) queue.add("a", cause("child", { object: `Pod ns/p${i}` }));
  const taken = (await queue.get())!;
  expect(taken.causes.list.length).toBe(16);
  expect(taken.causes.more).toBe(984);
});

Deno.test("the same change seen again is counted, not listed twice", async () => {
  const queue = new WorkQueue();
  const status = () => cause("watched", { object: "DaemonSet ns/x", change: "status" });
  queue.add("a", status());
  queue.add("a", status());
  queue.add("a", cause("watched", { object: "DaemonSet ns/x", change: "spec" }));
  const taken = (await queue.get())!;
  expect(taken.causes.list.map((c) => [c.change, c.times ?? 1])).toEqual([
    ["status", 2],
    ["spec", 1],
  ]);
});

Deno.test(
  "a delayed burst handed straight to a waiting worker is one visit",
  withClock(async (clock) => {
    const queue = new WorkQueue();
    const waiting = queue.get();
    for (let i = 0; i < 5; i++) {
      queue.addAfter("a", 300, cause("child", { object: `Pod ns/p${i}` }));
    }
    await clock.tickAsync(300);
    const taken = (await waiting)!;
    expect(taken.causes.list.length).toBe(5);
    queue.done("a");
    expect(queue.idle).toBe(true);
  }),
);

Deno.test("without priority, one first-come-first-served line", async () => {
  const queue = new WorkQueue({ priority: false });
  queue.add("bulk", cause("start"));
  queue.add("edit", cause("updated"));
  expect([(await queue.get())?.key, (await queue.get())?.key]).toEqual(["bulk", "edit"]);
});

Deno.test(
  "while edits come, bulk keys in workers' hands stay within the bound; edits still go",
  withClock(async (clock) => {
    const queue = new WorkQueue({ maxBulkInFlightWhileEditing: 2 });
    for (const key of ["b1", "b2", "b3", "b4"]) queue.add(key, cause("start"));
    queue.add("e1", cause("updated", { change: "spec" }));
    const taken = [await queue.get(), await queue.get(), await queue.get()].map((t) => t?.key);
    expect(taken).toEqual(["e1", "b1", "b2"]);
    let third: string | undefined;
    queue.get().then((t) => third = t?.key);
    await Promise.resolve();
    expect(third).toBeUndefined();
    // An edit goes past the bound at once; the bulk key waits for a bulk key's worker.
    queue.add("e2", cause("updated", { change: "spec" }));
    await Promise.resolve();
    expect(third).toBe("e2");
    let fourth: string | undefined;
    queue.get().then((t) => fourth = t?.key);
    queue.done("e1");
    await Promise.resolve();
    expect(fourth).toBeUndefined();
    queue.done("b1");
    await Promise.resolve();
    expect(fourth).toBe("b3");
    // Edits went quiet: bulk work takes every worker again.
    clock.tick(EDITS_RECENT_MS);
    expect((await queue.get())?.key).toBe("b4");
  }),
);

Deno.test("without edits, bulk work takes every worker: a cold start is not held back", async () => {
  const queue = new WorkQueue({ maxBulkInFlightWhileEditing: 1 });
  for (const key of ["b1", "b2", "b3"]) queue.add(key, cause("start"));
  const taken = [await queue.get(), await queue.get(), await queue.get()].map((t) => t?.key);
  expect(taken).toEqual(["b1", "b2", "b3"]);
});

Deno.test("bulk keys never take the workers kept for edits: an edit finds one free", async () => {
  const queue = new WorkQueue({ maxBulkInFlight: 2 });
  for (const key of ["b1", "b2", "b3"]) queue.add(key, cause("start"));
  const taken = [await queue.get(), await queue.get()].map((t) => t?.key);
  expect(taken).toEqual(["b1", "b2"]);
  let third: string | undefined;
  queue.get().then((t) => third = t?.key);
  await Promise.resolve();
  expect(third).toBeUndefined();
  queue.add("e1", cause("updated", { change: "spec" }));
  await Promise.resolve();
  expect(third).toBe("e1");
  let fourth: string | undefined;
  queue.get().then((t) => fourth = t?.key);
  queue.done("b1");
  await Promise.resolve();
  expect(fourth).toBe("b3");
});
