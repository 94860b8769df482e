import { expect } from "expect";
import type { VisitRecord } from "../../runtime/mod.ts";
import { timeline } from "./explain.ts";

const visit = (at: string, controller: string, more: Partial<VisitRecord> = {}): VisitRecord => ({
  at,
  controller,
  key: "Ptemplate.pt.example.com/default/consumer-pod",
  causes: ["updated Ptemplate default/consumer-pod (spec)"],
  moreCauses: 0,
  priority: "edit",
  waitedMs: 3,
  tookMs: 12,
  outcome: "reconciled",
  writes: [],
  events: [],
  conditions: [],
  ...more,
});

Deno.test("explain prints every controller's visits as one timeline, in time order", () => {
  const text = timeline({
    object: "Ptemplate default/consumer-pod",
    controllers: [
      {
        controller: "status-aggregator",
        kept: 1000,
        visits: [visit("2026-12-01T10:00:02.000Z", "status-aggregator", {
          causes: ["watched DaemonSet default/consumer-pod-consumer (status)"],
          moreCauses: 2,
          conditions: ["Ready=False (Progressing)"],
          next: "again in 5 s",
        })],
      },
      {
        controller: "consumer-daemonset",
        kept: 1000,
        visits: [visit("2026-12-01T10:00:01.000Z", "consumer-daemonset", {
          writes: ["PATCH /apis/apps/v1/namespaces/default/daemonsets/consumer-pod-consumer → 200"],
        })],
      },
    ],
  });
  expect(text.split("\n")[0]).toBe(
    "Ptemplate default/consumer-pod: 2 recent visit(s) (each controller keeps its last 1000)",
  );
  expect(text.indexOf("consumer-daemonset")).toBeLessThan(text.indexOf("status-aggregator"));
  expect(text).toContain("    why    updated Ptemplate default/consumer-pod (spec)");
  expect(text).toContain("    wrote  PATCH /apis/apps/v1/namespaces/default/daemonsets/");
  expect(text).toContain("           and 2 more");
  expect(text).toContain("    set    Ready=False (Progressing)");
  expect(text).toContain("    next   again in 5 s");
});

Deno.test("explain says why a timeline is empty", () => {
  const text = timeline({ object: "Ptemplate default/x", controllers: [] });
  expect(text).toContain("no visit of it is kept");
});
