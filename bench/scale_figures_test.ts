import { expect } from "expect";
import type { AuditEvent } from "../testing/audit_log.ts";
import { perPtemplate, ratios, writeFigures } from "./scale_figures.ts";

const OPERATOR = "system:serviceaccount:ns:operator";

function event(
  seconds: number,
  verb: string,
  resource: string,
  options: { subresource?: string; username?: string; code?: number } = {},
): AuditEvent {
  return {
    verb,
    user: { username: options.username ?? OPERATOR },
    objectRef: { resource, subresource: options.subresource, namespace: "scale", name: "x" },
    responseStatus: { code: options.code ?? (verb === "create" ? 201 : 200) },
    requestURI: "/",
    requestReceivedTimestamp: new Date(seconds * 1000).toISOString(),
  };
}

Deno.test("write figures count the operator's own work from its start, not reads, leases or others' writes", () => {
  const audit = [
    event(9, "create", "modules"), // before the start: an earlier run's
    event(10.5, "list", "modules"),
    event(11, "create", "modules"),
    event(11.5, "update", "leases"),
    event(12, "patch", "daemonsets", { code: 201 }), // a create-only apply
    event(12.5, "create", "daemonsets", { code: 409 }), // refused: not a child made
    event(13, "create", "modules", { username: "admin" }),
    event(17, "patch", "ptemplates", { subresource: "status" }),
  ];
  const figures = writeFigures(audit, { username: OPERATOR, since: 10_000, count: 2 });
  expect(figures).toEqual({
    childrenSeconds: 2,
    firstChildSeconds: 1,
    quietSeconds: 7,
    writes: { "create modules": 1, "create daemonsets": 2, "patch ptemplates/status": 1 },
    writeTimeline: {
      "0s": { modules: 1, daemonsets: 2 },
      "5s": { "ptemplates/status": 1 },
    },
    writesTotal: 4,
    writesPerPtemplate: 2,
  });
});

Deno.test("per-Ptemplate work reads controller-runtime's metric names, with or without a priority label", () => {
  const metrics = [
    "# HELP controller_runtime_reconcile_total Total number of reconciliations",
    'controller_runtime_reconcile_total{controller="ptemplate",result="success"} 400',
    'controller_runtime_reconcile_total{controller="ptemplate",result="error"} 0',
    'workqueue_adds_total{name="ptemplate"} 600',
    'workqueue_adds_total{name="kmm-module",priority="bulk"} 200',
    'rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 400',
    "process_cpu_seconds_total 1.5",
  ].join("\n");
  expect(perPtemplate(metrics, 200)).toEqual({
    "reconciles ptemplate success": 2,
    "queue adds ptemplate": 3,
    "queue adds kmm-module bulk": 1,
    "requests POST 201": 2,
  });
});

Deno.test("ratios are ours over theirs: below 1 is ours smaller", () => {
  const ours = {
    childrenSeconds: 30,
    childrenRatio: 1.5,
    peakRssMiB: 150,
    emptyRssMiB: 50,
    cpuSeconds: 60,
    writesPerPtemplate: 3,
  };
  const theirs = {
    childrenSeconds: 40,
    childrenRatio: 1.2,
    peakRssMiB: 300,
    emptyRssMiB: 25,
    cpuSeconds: 48,
    writesPerPtemplate: 2,
  };
  expect(ratios(ours, theirs)).toEqual({
    childrenSeconds: 0.75,
    childrenRatio: 1.25,
    peakRssMiB: 0.5,
    emptyRssMiB: 2,
    cpuSeconds: 1.25,
    writesPerPtemplate: 1.5,
  });
});
