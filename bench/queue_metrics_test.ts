import { expect } from "expect";
import { drained, meansMs, queuesOf } from "./queue_metrics.ts";

const metrics = (lines: [string, string, string, number][]) =>
  lines.map(([metric, name, priority, value]) =>
    `workqueue_${metric}{name="${name}",priority="${priority}"} ${value}`
  ).join("\n");

Deno.test("queuesOf reads depth and adds per queue and lane, summed over replicas", () => {
  const queues = queuesOf(
    "# HELP workqueue_depth Current depth of workqueue\n" +
      metrics([
        ["depth", "kmm-module", "bulk", 3],
        ["depth", "kmm-module", "bulk", 2],
        ["adds_total", "kmm-module", "edit", 7],
      ]),
  );
  expect(queues.get("kmm-module")).toEqual({ depth: { bulk: 5 }, adds: { edit: 7 }, taken: {} });
});

Deno.test("drained: every queue that took the backlog has none of it left waiting", () => {
  const priority = { count: 10, priority: true };
  const state = (depthA: number, depthB: number) =>
    queuesOf(metrics([
      ["adds_total", "a", "bulk", 10],
      ["depth", "a", "bulk", depthA],
      ["adds_total", "b", "bulk", 12],
      ["depth", "b", "bulk", depthB],
      ["depth", "b", "edit", 4],
    ]));
  expect(drained(state(0, 1), priority)).toBe(false);
  expect(drained(state(1, 0), priority)).toBe(false);
  // Edits waiting do not hold up the bulk lane's drain.
  expect(drained(state(0, 0), priority)).toBe(true);
});

Deno.test("drained without priorities: the first N keys of the one line handed out", () => {
  const fifo = { count: 10, priority: false };
  const state = (taken: number) =>
    queuesOf(metrics([
      ["adds_total", "a", "edit", 14],
      ["queue_duration_seconds_count", "a", "edit", taken],
      // Edits that came after the backlog still wait behind it: not the backlog's.
      ["depth", "a", "edit", 4],
    ]));
  expect(drained(state(9), fifo)).toBe(false);
  expect(drained(state(10), fifo)).toBe(true);
});

Deno.test("drained: not before any queue has taken the backlog", () => {
  const early = queuesOf(metrics([["adds_total", "a", "bulk", 3], ["depth", "a", "bulk", 0]]));
  expect(drained(early, { count: 10, priority: true })).toBe(false);
  expect(drained(new Map(), { count: 10, priority: true })).toBe(false);
});

Deno.test("drained since a state: only what was queued after it counts", () => {
  const before = queuesOf(metrics([
    ["adds_total", "a", "bulk", 10],
    ["adds_total", "a", "edit", 10],
    ["queue_duration_seconds_count", "a", "edit", 10],
  ]));
  const now = (adds: number, depth: number, taken: number) =>
    queuesOf(metrics([
      ["adds_total", "a", "bulk", adds],
      ["depth", "a", "bulk", depth],
      ["adds_total", "a", "edit", adds],
      ["queue_duration_seconds_count", "a", "edit", taken],
    ]));
  // The first backlog's adds alone are not the second's.
  expect(drained(now(10, 0, 10), { count: 10, priority: true, since: before })).toBe(false);
  expect(drained(now(20, 3, 15), { count: 10, priority: true, since: before })).toBe(false);
  expect(drained(now(20, 0, 20), { count: 10, priority: true, since: before })).toBe(true);
  expect(drained(now(20, 0, 19), { count: 10, priority: false, since: before })).toBe(false);
  expect(drained(now(20, 0, 20), { count: 10, priority: false, since: before })).toBe(true);
});

Deno.test("meansMs: a histogram's mean per label, summed over the others", () => {
  const text = [
    'workqueue_queue_duration_seconds_bucket{name="a",priority="edit",le="1"} 2',
    'workqueue_queue_duration_seconds_sum{name="a",priority="edit"} 0.5',
    'workqueue_queue_duration_seconds_count{name="a",priority="edit"} 2',
    'workqueue_queue_duration_seconds_sum{name="b",priority="edit"} 1.5',
    'workqueue_queue_duration_seconds_count{name="b",priority="edit"} 2',
    'workqueue_queue_duration_seconds_sum{name="b",priority="bulk"} 0',
    'workqueue_queue_duration_seconds_count{name="b",priority="bulk"} 0',
    'workqueue_work_duration_seconds_sum{name="b"} 9',
    'workqueue_work_duration_seconds_count{name="b"} 1',
  ].join("\n");
  expect(meansMs(text, "workqueue_queue_duration_seconds", ["priority"])).toEqual({ edit: 500 });
  expect(meansMs(text, "workqueue_queue_duration_seconds", ["name", "priority"])).toEqual({
    "a edit": 250,
    "b edit": 750,
  });
  expect(meansMs(text, "workqueue_work_duration_seconds", ["name"])).toEqual({ b: 9000 });
});
