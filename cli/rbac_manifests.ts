/** `ptemplate-operator rbac`: the RBAC objects the enabled plugins need, from their declarations. */
import { Document, isScalar, visit } from "yaml";
import { type Unstructured } from "../kube/mod.ts";
import { LEADER_ELECTION_RULES, type Plugin, rbacRules } from "../runtime/mod.ts";

const NAME = "ptemplate-operator";
const SERVICE_ACCOUNT = {
  kind: "ServiceAccount",
  name: NAME,
  namespace: "ptemplate-operator-system",
};

/**
 * A ClusterRole for a cluster-wide operator, or a Role in each of `namespaces` for one confined
 * to them; and the leader-election Role in the operator's own namespace; each bound to the
 * operator's ServiceAccount, so the output is complete as it is applied.
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
  if (!options.namespaces?.length) {
    const rules = rbacRules(plugins, { webhooks: options.webhooks });
    return [...bound("ClusterRole", NAME, rules), ...leaderElection];
  }
  const rules = rbacRules(plugins, { namespaced: true, webhooks: options.webhooks });
  return [
    ...options.namespaces.flatMap((namespace) => bound("Role", NAME, rules, namespace)),
    ...leaderElection,
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
