/** `ptemplate-operator rbac`: the RBAC objects the enabled plugins need, from their declarations. */
import { Document, isScalar, visit } from "yaml";
import { type Unstructured } from "../kube/mod.ts";
import {
  ACCESS_REVIEW_RULES,
  LEADER_ELECTION_RULES,
  type Plugin,
  rbacRules,
} from "../runtime/mod.ts";

const NAME = "ptemplate-operator";
const SERVICE_ACCOUNT = {
  kind: "ServiceAccount",
  name: NAME,
  namespace: "ptemplate-operator-system",
};

/** The names of the RBAC objects for /metrics: what the operator asks, and what readers get. */
export const METRICS_ROLES = {
  auth: `${NAME}-metrics-auth`,
  reader: `${NAME}-metrics-reader`,
} as const;

/**
 * A ClusterRole for a cluster-wide operator, or a Role and RoleBinding in each of `namespaces`
 * for one confined to them; the leader-election Role for the operator's own namespace; and the
 * ClusterRole (with its binding) to check the callers of `/metrics`, in either mode.
 */
export function rbacManifests(
  plugins: Plugin[],
  options: { namespaces?: string[]; webhooks?: boolean } = {},
): Unstructured[] {
  const rbac = "rbac.authorization.k8s.io/v1";
  const leaderElection: Unstructured = {
    apiVersion: rbac,
    kind: "Role",
    metadata: { name: `${NAME}-leader-election` },
    rules: LEADER_ELECTION_RULES,
  };
  const metricsAuth: Unstructured[] = [
    {
      apiVersion: rbac,
      kind: "ClusterRole",
      metadata: { name: METRICS_ROLES.auth },
      rules: ACCESS_REVIEW_RULES,
    },
    {
      apiVersion: rbac,
      kind: "ClusterRoleBinding",
      metadata: { name: METRICS_ROLES.auth },
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: METRICS_ROLES.auth,
      },
      subjects: [SERVICE_ACCOUNT],
    },
  ];
  if (!options.namespaces?.length) {
    return [
      {
        apiVersion: rbac,
        kind: "ClusterRole",
        metadata: { name: NAME },
        rules: rbacRules(plugins, { webhooks: options.webhooks }),
      },
      leaderElection,
      ...metricsAuth,
    ];
  }
  const rules = rbacRules(plugins, { namespaced: true, webhooks: options.webhooks });
  return [
    ...options.namespaces.flatMap((namespace): Unstructured[] => [
      { apiVersion: rbac, kind: "Role", metadata: { name: NAME, namespace }, rules },
      {
        apiVersion: rbac,
        kind: "RoleBinding",
        metadata: { name: NAME, namespace },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: NAME },
        subjects: [SERVICE_ACCOUNT],
      },
    ]),
    leaderElection,
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
