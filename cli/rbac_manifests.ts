/**
 * `rbac`: the RBAC objects the enabled plugins need, from their declarations, named after the
 * operator (its ServiceAccount, ClusterRole, Roles and bindings), so two operators never share one.
 */
import { Document, isScalar, visit } from "yaml";
import { type Unstructured } from "../kube/mod.ts";
import {
  ACCESS_REVIEW_RULES,
  LEADER_ELECTION_RULES,
  type OperatorIdentity,
  type Plugin,
  PTEMPLATE_OPERATOR,
  rbacRules,
  SHARD_RING_RULES,
} from "../runtime/mod.ts";
import { metricsRoles } from "./metrics_roles.ts";

export { metricsRoles };

/** The operator's ServiceAccount, in its namespace: what every binding names. */
export function serviceAccountOf(
  operator: OperatorIdentity,
): { kind: "ServiceAccount"; name: string; namespace: string } {
  return { kind: "ServiceAccount", name: operator.name, namespace: operator.namespace };
}

/** A role (cluster-wide, or in `namespace`) and its binding to the operator's ServiceAccount. */
export function boundRole(
  operator: OperatorIdentity,
  kind: "ClusterRole" | "Role",
  name: string,
  rules: unknown[],
  namespace?: string,
): Unstructured[] {
  const rbac = "rbac.authorization.k8s.io/v1";
  const metadata = namespace ? { name, namespace } : { name };
  return [
    { apiVersion: rbac, kind, metadata, rules },
    {
      apiVersion: rbac,
      kind: `${kind}Binding`,
      metadata,
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind, name },
      subjects: [serviceAccountOf(operator)],
    },
  ];
}

/**
 * A ClusterRole for a cluster-wide operator, or a Role in each of `namespaces` for one confined
 * to them; the leader-election Role in the operator's own namespace; and the ClusterRole to check
 * the callers of `/metrics`, in either mode; each bound to the operator's ServiceAccount, so the
 * output is complete as it is applied.
 */
export function rbacManifests(
  plugins: Plugin[],
  options: {
    operator?: OperatorIdentity;
    namespaces?: string[];
    webhooks?: boolean;
    /** With the Role a ring of shards needs beyond leader election (`run --shards`). */
    shards?: boolean;
  } = {},
): Unstructured[] {
  const operator = options.operator ?? PTEMPLATE_OPERATOR;
  const bound = (kind: "ClusterRole" | "Role", name: string, rules: unknown[], ns?: string) =>
    boundRole(operator, kind, name, rules, ns);
  // The Leases' Roles, in the operator's own namespace: leader election's, and a ring's.
  const leases = [
    ...bound("Role", `${operator.name}-leader-election`, LEADER_ELECTION_RULES, operator.namespace),
    ...options.shards
      ? bound("Role", `${operator.name}-shard-ring`, SHARD_RING_RULES, operator.namespace)
      : [],
  ];
  const metricsAuth = bound("ClusterRole", metricsRoles(operator).auth, ACCESS_REVIEW_RULES);
  if (!options.namespaces?.length) {
    const rules = rbacRules(plugins, { webhooks: options.webhooks });
    return [...bound("ClusterRole", operator.name, rules), ...leases, ...metricsAuth];
  }
  const rules = rbacRules(plugins, { namespaced: true, webhooks: options.webhooks });
  return [
    ...options.namespaces.flatMap((namespace) => bound("Role", operator.name, rules, namespace)),
    ...leases,
    ...metricsAuth,
  ];
}

/** As YAML, lists of words on one line (`verbs: [list, watch]`), as people write RBAC. */
export function rbacYaml(manifests: Unstructured[]): string {
  return manifests.map((manifest) => {
    const document = new Document(manifest);
    visit(document, {
      Seq(_, node) {
        if (node.items.every(isScalar)) node.flow = true;
      },
    });
    return document.toString({ lineWidth: 0, flowCollectionPadding: false });
  }).join("---\n");
}
