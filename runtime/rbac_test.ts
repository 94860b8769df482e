import { expect } from "expect";
import { CONFIG_MAP, DAEMON_SET, NODE, POD } from "../kube/kinds.ts";
import { definePlugin } from "./plugin/mod.ts";
import { grantsOf, rbacRules, selfManagedCertificateRules } from "./rbac.ts";

const THING = {
  group: "x.example.com",
  version: "v1",
  kind: "Thing",
  plural: "things",
  namespaced: true,
};
const reconcile = () => {};

Deno.test("rbac: each declaration grants its verbs, and nothing else", () => {
  const plugin = definePlugin({
    name: "p",
    for: THING,
    owns: [DAEMON_SET],
    watches: [{ resource: POD, map: () => [] }],
    reconcile,
  });
  expect(grantsOf(rbacRules([plugin]))).toEqual([
    " events create",
    " events patch",
    " pods list",
    " pods watch",
    "apps daemonsets create",
    "apps daemonsets delete",
    "apps daemonsets list",
    "apps daemonsets patch",
    "apps daemonsets watch",
    "x.example.com things list",
    "x.example.com things watch",
    "x.example.com things/status patch",
  ]);
});

Deno.test("rbac: no status, a finalizer, and a plugin's own requests", () => {
  const plugin = definePlugin({
    name: "p",
    for: THING,
    writesStatus: false,
    finalize() {},
    permissions: [{ resource: CONFIG_MAP, verbs: ["get", "create"] }],
    reconcile,
  });
  const grants = grantsOf(rbacRules([plugin]));
  expect(grants).not.toContain("x.example.com things/status patch");
  expect(grants).toContain("x.example.com things patch");
  expect(grants).toContain(" configmaps get");
  expect(grants).toContain(" configmaps create");
  expect(grantsOf(rbacRules([]))).toEqual([]);
});

Deno.test("rbac: Roles leave out optional cluster-scoped watches and refuse required ones", () => {
  const optional = definePlugin({
    name: "p",
    for: THING,
    watches: [{ resource: NODE, map: () => [], optional: true }],
    reconcile,
  });
  expect(grantsOf(rbacRules([optional]))).toContain(" nodes watch");
  expect(grantsOf(rbacRules([optional], { namespaced: true }))).not.toContain(" nodes watch");
  const required = definePlugin({
    name: "q",
    for: THING,
    watches: [{ resource: NODE, map: () => [] }],
    reconcile,
  });
  expect(() => rbacRules([required], { namespaced: true })).toThrow(/Node is cluster-scoped/);
});

Deno.test("rbac: self-managed certificates name what they touch, never every CRD", () => {
  const rules = (crds: string[]) =>
    selfManagedCertificateRules({ secretName: "s", webhookConfiguration: "w", crds });
  expect(grantsOf(rules(["a.example.com"]).cluster)).toContain(
    "apiextensions.k8s.io customresourcedefinitions patch",
  );
  // Without names a rule would grant every CRD: with nothing to convert there is no rule.
  expect(JSON.stringify(rules([]).cluster)).not.toContain("customresourcedefinitions");
  for (const rule of rules([]).cluster) expect(rule.resourceNames).toEqual(["w"]);
});
