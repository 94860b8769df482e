/** The built-in Kubernetes kinds the operator and its tests address, as `Resource` descriptors. */
import type { Resource } from "./resource.ts";

function core(kind: string, plural: string, namespaced: boolean): Resource {
  return { group: "", version: "v1", kind, plural, namespaced };
}

export const NAMESPACE: Resource = core("Namespace", "namespaces", false);
export const NODE: Resource = core("Node", "nodes", false);
export const POD: Resource = core("Pod", "pods", true);
export const SERVICE_ACCOUNT: Resource = core("ServiceAccount", "serviceaccounts", true);
export const CONFIG_MAP: Resource = core("ConfigMap", "configmaps", true);
export const SECRET: Resource = core("Secret", "secrets", true);
export const SERVICE: Resource = core("Service", "services", true);
export const EVENT: Resource = core("Event", "events", true);

export const DAEMON_SET: Resource = {
  group: "apps",
  version: "v1",
  kind: "DaemonSet",
  plural: "daemonsets",
  namespaced: true,
};
export const DEPLOYMENT: Resource = {
  group: "apps",
  version: "v1",
  kind: "Deployment",
  plural: "deployments",
  namespaced: true,
};
export const LEASE: Resource = {
  group: "coordination.k8s.io",
  version: "v1",
  kind: "Lease",
  plural: "leases",
  namespaced: true,
};
export const CUSTOM_RESOURCE_DEFINITION: Resource = {
  group: "apiextensions.k8s.io",
  version: "v1",
  kind: "CustomResourceDefinition",
  plural: "customresourcedefinitions",
  namespaced: false,
};

function rbac(kind: string, plural: string, namespaced: boolean): Resource {
  return { group: "rbac.authorization.k8s.io", version: "v1", kind, plural, namespaced };
}

export const ROLE: Resource = rbac("Role", "roles", true);
export const ROLE_BINDING: Resource = rbac("RoleBinding", "rolebindings", true);
export const CLUSTER_ROLE: Resource = rbac("ClusterRole", "clusterroles", false);
export const CLUSTER_ROLE_BINDING: Resource = rbac(
  "ClusterRoleBinding",
  "clusterrolebindings",
  false,
);
