/** The built-in Kubernetes kinds the operator and its tests address, as typed `Resource`s. */
import type {
  ClusterRole,
  ClusterRoleBinding,
  ConfigMap,
  DaemonSet,
  Deployment,
  Event,
  Lease,
  MutatingWebhookConfiguration,
  Namespace,
  NetworkPolicy,
  Node,
  Pod,
  Role,
  RoleBinding,
  Secret,
  Service,
  ServiceAccount,
  ValidatingWebhookConfiguration,
} from "./object_types.ts";
import type { KubeObject, Unstructured } from "./object.ts";
import type { Resource } from "./resource.ts";

function kind<T extends KubeObject, N extends boolean>(
  group: string,
  kind: string,
  plural: string,
  namespaced: N,
): Resource<T, N> {
  return { group, version: "v1", kind, plural, namespaced };
}

/** Namespaces (cluster-scoped). */
export const NAMESPACE: Resource<Namespace, false> = kind("", "Namespace", "namespaces", false);
/** Nodes (cluster-scoped). */
export const NODE: Resource<Node, false> = kind("", "Node", "nodes", false);
/** Pods. */
export const POD: Resource<Pod, true> = kind("", "Pod", "pods", true);
/** ServiceAccounts. */
export const SERVICE_ACCOUNT: Resource<ServiceAccount, true> = kind(
  "",
  "ServiceAccount",
  "serviceaccounts",
  true,
);
/** ConfigMaps. */
export const CONFIG_MAP: Resource<ConfigMap, true> = kind("", "ConfigMap", "configmaps", true);
/** Secrets. */
export const SECRET: Resource<Secret, true> = kind("", "Secret", "secrets", true);
/** Services. */
export const SERVICE: Resource<Service, true> = kind("", "Service", "services", true);
/** Events (core/v1, as `kubectl describe` shows them). */
export const EVENT: Resource<Event, true> = kind("", "Event", "events", true);
/** DaemonSets. */
export const DAEMON_SET: Resource<DaemonSet, true> = kind("apps", "DaemonSet", "daemonsets", true);
/** Deployments. */
export const DEPLOYMENT: Resource<Deployment, true> = kind(
  "apps",
  "Deployment",
  "deployments",
  true,
);
/** Leases (leader election). */
export const LEASE: Resource<Lease, true> = kind("coordination.k8s.io", "Lease", "leases", true);
/** NetworkPolicies. */
export const NETWORK_POLICY: Resource<NetworkPolicy, true> = kind(
  "networking.k8s.io",
  "NetworkPolicy",
  "networkpolicies",
  true,
);
/** Untyped: the operator writes CRDs as plain values (see `custom_resource_definition.ts`). */
export const CUSTOM_RESOURCE_DEFINITION: Resource<Unstructured, false> = kind(
  "apiextensions.k8s.io",
  "CustomResourceDefinition",
  "customresourcedefinitions",
  false,
);
/** Roles. */
export const ROLE: Resource<Role, true> = kind("rbac.authorization.k8s.io", "Role", "roles", true);
/** RoleBindings. */
export const ROLE_BINDING: Resource<RoleBinding, true> = kind(
  "rbac.authorization.k8s.io",
  "RoleBinding",
  "rolebindings",
  true,
);
/** ClusterRoles (cluster-scoped). */
export const CLUSTER_ROLE: Resource<ClusterRole, false> = kind(
  "rbac.authorization.k8s.io",
  "ClusterRole",
  "clusterroles",
  false,
);
/** ClusterRoleBindings (cluster-scoped). */
export const CLUSTER_ROLE_BINDING: Resource<ClusterRoleBinding, false> = kind(
  "rbac.authorization.k8s.io",
  "ClusterRoleBinding",
  "clusterrolebindings",
  false,
);
/** ValidatingWebhookConfigurations (cluster-scoped). */
export const VALIDATING_WEBHOOK_CONFIGURATION: Resource<ValidatingWebhookConfiguration, false> =
  kind(
    "admissionregistration.k8s.io",
    "ValidatingWebhookConfiguration",
    "validatingwebhookconfigurations",
    false,
  );
/** MutatingWebhookConfigurations (cluster-scoped). */
export const MUTATING_WEBHOOK_CONFIGURATION: Resource<MutatingWebhookConfiguration, false> = kind(
  "admissionregistration.k8s.io",
  "MutatingWebhookConfiguration",
  "mutatingwebhookconfigurations",
  false,
);
