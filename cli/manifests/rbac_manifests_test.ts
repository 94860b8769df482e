import { expect } from "expect";
import { parseAllDocuments } from "yaml";
import { type Unstructured } from "../../kube/mod.ts";
import {
  defineOperator,
  grantsOf,
  LEADER_ELECTION_RULES,
  type PolicyRule,
  PTEMPLATE_OPERATOR,
  rbacRules,
  SHARD_RING_RULES,
} from "../../runtime/mod.ts";
import { builtInCatalog, selectPlugins } from "../plugin_loading/plugin_catalog.ts";
import { metricsRoles, rbacManifests, rbacYaml } from "./rbac_manifests.ts";
import { METRICS_READER_RULES } from "../../runtime/observe/mod.ts";

const read = async (path: string) =>
  parseAllDocuments(await Deno.readTextFile(new URL(`../../${path}`, import.meta.url)))
    .map((d) => d.toJSON() as Unstructured);
const defaults = () => selectPlugins(builtInCatalog(), undefined).map((e) => e.plugin);
const rulesOf = (o: Unstructured) => o.rules as PolicyRule[];
const METRICS_ROLES = metricsRoles(PTEMPLATE_OPERATOR);

/** The objects, their rules compared as grants however they are grouped. */
const comparable = (objects: Unstructured[]) =>
  objects.map((o) => o.rules ? { ...o, rules: grantsOf(rulesOf(o)) } : o);

Deno.test("deploy/ installs exactly what `ptemplate-operator rbac` prints: roles and bindings", async () => {
  const deployed = [
    ...await read("deploy/cluster/cluster_role.yaml"),
    ...await read("deploy/cluster/cluster_role_binding.yaml"),
    // kustomize puts these in the operator's namespace (deploy/core/kustomization.yaml).
    ...[
      ...await read("deploy/core/leader_election_role.yaml"),
      ...await read("deploy/core/leader_election_role_binding.yaml"),
    ].map((o) => ({ ...o, metadata: { ...o.metadata, namespace: "ptemplate-operator-system" } })),
    ...await read("deploy/core/metrics_auth_role.yaml"),
    ...await read("deploy/core/metrics_auth_role_binding.yaml"),
  ];
  expect(comparable(deployed)).toEqual(comparable(rbacManifests(defaults())));
});

Deno.test("deploy/namespaced grants in each namespace what `rbac --namespace` derives", async () => {
  const deployed = await read("deploy/namespaced/roles.yaml");
  const namespaces = deployed.filter((o) => o.kind === "Role").map((o) => o.metadata!.namespace!);
  expect(namespaces).toEqual(["team-a", "team-b"]);
  const derived = rbacManifests(defaults(), { namespaces })
    .filter((o) => namespaces.includes(o.metadata!.namespace!));
  expect(comparable(deployed)).toEqual(comparable(derived));
});

Deno.test("deploy/ lets the operator check the callers of /metrics, and a Prometheus read it", async () => {
  const derived = rbacManifests(defaults());
  const auth = derived.find((o) =>
    o.kind === "ClusterRole" && o.metadata?.name === METRICS_ROLES.auth
  )!;
  const [deployed] = await read("deploy/core/metrics_auth_role.yaml");
  expect(deployed.metadata?.name).toBe(METRICS_ROLES.auth);
  expect(grantsOf(rulesOf(deployed))).toEqual(grantsOf(rulesOf(auth)));
  expect(grantsOf(rulesOf(auth))).toEqual([
    "authentication.k8s.io tokenreviews create",
    "authorization.k8s.io subjectaccessreviews create",
  ]);
  const [binding] = await read("deploy/core/metrics_auth_role_binding.yaml");
  const derivedBinding = derived.find((o) =>
    o.kind === "ClusterRoleBinding" && o.metadata?.name === METRICS_ROLES.auth
  )!;
  expect(binding).toEqual(derivedBinding);
  // The namespaced install needs it as well: no Role can grant it.
  expect(rbacManifests(defaults(), { namespaces: ["a"] }).map((o) => o.metadata?.name))
    .toContain(METRICS_ROLES.auth);
  const [reader] = await read("deploy/core/metrics_reader_role.yaml");
  expect(reader.metadata?.name).toBe(METRICS_ROLES.reader);
  expect(reader.rules).toEqual(METRICS_READER_RULES);
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

Deno.test("another operator's RBAC is all its own: names, namespace, ServiceAccount", () => {
  const backup = defineOperator({
    name: "backup-operator",
    domain: "example.com",
    version: "0.1.0",
  });
  for (const namespaces of [undefined, ["team-a"]]) {
    const ours = rbacManifests(defaults(), { namespaces });
    const theirs = rbacManifests(defaults(), { operator: backup, namespaces });
    const names = (objects: Unstructured[]) =>
      objects.map((o) => `${o.kind} ${o.metadata?.namespace ?? ""}/${o.metadata?.name}`);
    // Nothing in common: applying one never changes the other's objects.
    expect(names(theirs).filter((n) => names(ours).includes(n))).toEqual([]);
    expect(names(theirs).every((n) => n.includes("backup-operator") || n.includes("team-a/")))
      .toBe(true);
    for (const binding of theirs.filter((o) => o.kind?.endsWith("Binding"))) {
      expect(binding.subjects).toEqual([
        { kind: "ServiceAccount", name: "backup-operator", namespace: "backup-operator-system" },
      ]);
    }
  }
});

Deno.test("deploy/shards grants a ring exactly what it needs beyond leader election", async () => {
  const [role] = (await read("deploy/shards/shard_ring_role.yaml")) as { rules: PolicyRule[] }[];
  expect(role.rules).toEqual(SHARD_RING_RULES);
  // What `rbac --shards` prints beside the rest, its binding too.
  const printed = rbacManifests([], { shards: true });
  expect([
    ...await read("deploy/shards/shard_ring_role.yaml"),
    ...await read("deploy/shards/shard_ring_role_binding.yaml"),
  ]).toEqual(printed.filter((o) => o.metadata?.name === "ptemplate-operator-shard-ring"));
  expect(rbacManifests([]).map((o) => o.metadata?.name)).not.toContain(
    "ptemplate-operator-shard-ring",
  );
  const kustomization = await Deno.readTextFile(
    new URL("../../deploy/shards/kustomization.yaml", import.meta.url),
  );
  expect(kustomization).toContain("value: --shards=2");
});
