import { expect } from "expect";
import { parseAllDocuments } from "yaml";
import { type Unstructured } from "../kube/mod.ts";
import { grantsOf, LEADER_ELECTION_RULES, type PolicyRule, rbacRules } from "../runtime/mod.ts";
import { builtInCatalog, selectPlugins } from "./plugin_catalog.ts";
import { rbacManifests, rbacYaml } from "./rbac_manifests.ts";

const read = async (path: string) =>
  parseAllDocuments(await Deno.readTextFile(new URL(`../${path}`, import.meta.url)))
    .map((d) => d.toJSON() as Unstructured);
const defaults = () => selectPlugins(builtInCatalog(), undefined).map((e) => e.plugin);
const rulesOf = (o: Unstructured) => o.rules as PolicyRule[];

Deno.test("deploy/ grants exactly what `ptemplate-operator rbac` derives from the default plugins", async () => {
  const [clusterRole, leaderElection] = rbacManifests(defaults());
  const [deployed] = await read("deploy/cluster/cluster_role.yaml");
  expect(grantsOf(rulesOf(deployed))).toEqual(grantsOf(rulesOf(clusterRole)));
  const [deployedLeaderElection] = await read("deploy/core/leader_election_role.yaml");
  expect(grantsOf(rulesOf(deployedLeaderElection))).toEqual(grantsOf(rulesOf(leaderElection)));
});

Deno.test("deploy/namespaced grants in each namespace what `rbac --namespace` derives", async () => {
  const deployed = await read("deploy/namespaced/roles.yaml");
  const namespaces = deployed.filter((o) => o.kind === "Role").map((o) => o.metadata!.namespace!);
  expect(namespaces).toEqual(["team-a", "team-b"]);
  const derived = rbacManifests(defaults(), { namespaces });
  // Same objects, the rules compared as grants however they are grouped.
  const comparable = (objects: Unstructured[]) =>
    objects.filter((o) => o.kind !== "Role" || o.metadata?.namespace).map((o) =>
      o.rules ? { ...o, rules: grantsOf(rulesOf(o)) } : o
    );
  expect(comparable(deployed)).toEqual(comparable(derived.slice(0, -1)));
});

Deno.test("rbac output is valid YAML of the same objects, lists on one line", () => {
  const manifests = rbacManifests(defaults());
  const text = rbacYaml(manifests);
  expect(text).toContain("verbs: [list, watch, create, patch, delete]");
  expect(parseAllDocuments(text).map((d) => d.toJSON())).toEqual(manifests);
  expect(LEADER_ELECTION_RULES[0].resources).toEqual(["leases"]);
});

Deno.test("rbac --webhooks adds what admission reads, and only then", () => {
  const without = grantsOf(rulesOf(rbacManifests(defaults())[0]));
  const withWebhooks = grantsOf(rulesOf(rbacManifests(defaults(), { webhooks: true })[0]));
  expect(without).not.toContain(" secrets get");
  expect(withWebhooks).toContain(" secrets get");
  // Exactly admission's reads are added (some, like listing nodes, were granted already).
  const admission = grantsOf(rbacRules(defaults(), { webhooks: "only" }));
  expect(withWebhooks).toEqual(grantsOf([...without, ...admission].map((g) => {
    const [group, resource, verb] = g.split(" ");
    return { apiGroups: [group], resources: [resource], verbs: [verb as "get"] };
  })));
});
