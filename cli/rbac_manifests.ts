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
 * A ClusterRole for a cluster-wide operator, or a Role in each of `namespaces` for one confined
 * to them; the leader-election Role in the operator's own namespace; and the ClusterRole to check
 * the callers of `/metrics`, in either mode; each bound to the operator's ServiceAccount, so the
 * output is complete as it is applied.
 */
export function rbacManifests(
  plugins: Plugin[],
  options: { namespaces?: string[]; webhooks?: boolean } = {},
): Unstructured[] {
  const bound = (
    kind: "ClusterRole" | "Role",
    name: string,
    rules: unknown[],
    namespace?: string,
  ): Unstructured[] => {
    const rbac = "rbac.authorization.k8s.io/v1";
    const metadata = namespace ? { name, namespace } : { name };
    return [
      { apiVersion: rbac, kind, metadata, rules },
      {
        apiVersion: rbac,
        kind: `${kind}Binding`,
        metadata,
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind, name },
        subjects: [SERVICE_ACCOUNT],
      },
    ];
  };
  const leaderElection = bound(
    "Role",
    `${NAME}-leader-election`,
    LEADER_ELECTION_RULES,
    SERVICE_ACCOUNT.namespace,
  );
  const metricsAuth = bound("ClusterRole", METRICS_ROLES.auth, ACCESS_REVIEW_RULES);
  if (!options.namespaces?.length) {
    const rules = rbacRules(plugins, { webhooks: options.webhooks });
    return [...bound("ClusterRole", NAME, rules), ...leaderElection, ...metricsAuth];
  }
  const rules = rbacRules(plugins, { namespaced: true, webhooks: options.webhooks });
  return [
    ...options.namespaces.flatMap((namespace) => bound("Role", NAME, rules, namespace)),
    ...leaderElection,
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
