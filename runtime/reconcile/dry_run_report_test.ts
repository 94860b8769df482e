import { expect } from "expect";
import { Registry } from "../observe/mod.ts";
import { DryRunReport } from "./dry_run_report.ts";

Deno.test("a dry run keeps each change once, by object, and counts them", () => {
  const report = new DryRunReport();
  const registry = new Registry();
  report.register(registry);
  const update = { verb: "update", what: "DaemonSet a-consumer", controller: "consumer" };
  report.would("Ptemplate ns/a", "Ptemplate", update);
  report.would("Ptemplate ns/a", "Ptemplate", { ...update, detail: "said again" });
  report.would("Ptemplate ns/b", "Ptemplate", { verb: "status", what: "status", controller: "s" });
  expect(report.objects().map((o) => [o.object, o.changes.length])).toEqual([
    ["Ptemplate ns/a", 1],
    ["Ptemplate ns/b", 1],
  ]);
  expect(registry.render()).toMatch(
    /dry_run_changes_total\{controller="consumer",verb="update"\} 1/,
  );
  expect(report.summary({ Ptemplate: 10, Memcached: 3 })).toEqual([
    "would change 2 of 10 Ptemplate(s): 1 update DaemonSet, 1 status",
    "would change 0 of 3 Memcached(s)",
  ]);
});

Deno.test("in a dry run an Event is a change of the object it is about, not a write", () => {
  const report = new DryRunReport();
  report.events().record(
    { kind: "Ptemplate", metadata: { name: "a", namespace: "ns" } },
    { type: "Warning", reason: "ChildRefused", message: "the DaemonSet was refused" },
  );
  expect(report.objects()).toEqual([{
    object: "Ptemplate ns/a",
    kind: "Ptemplate",
    changes: [{
      verb: "event",
      what: "Warning ChildRefused",
      detail: "the DaemonSet was refused",
      controller: "",
    }],
  }]);
});
