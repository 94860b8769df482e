/** The built-in Kubernetes kinds the operator and its tests address, as typed `Resource`s. */
import type {
  MutatingWebhookConfiguration,
  ValidatingWebhookConfiguration,
} from "kubernetes-types/admissionregistration/v1.d.ts";
import type { DaemonSet, Deployment } from "kubernetes-types/apps/v1.d.ts";
import type { Lease } from "kubernetes-types/coordination/v1.d.ts";
import type { NetworkPolicy } from "kubernetes-types/networking/v1.d.ts";
import type {
  ConfigMap,
  Event,
  Namespace,
  Node,
  Pod,
  Secret,
  Service,
  ServiceAccount,
} from "kubernetes-types/core/v1.d.ts";
import type {
  ClusterRole,
  ClusterRoleBinding,
  Role,
  RoleBinding,
} from "kubernetes-types/rbac/v1.d.ts";
import type { KubeObject, Unstructured } from "./object.ts";
import type { Resource } from "./resource.ts";

function kind<T extends KubeObject>(
  group: string,
  kind: string,
  plural: string,
  namespaced: boolean,
): Resource<T> {
  return { group, version: "v1", kind, plural, namespaced };
}

export const NAMESPACE: Resource<Namespace> = kind("", "Namespace", "namespaces", false);
export const NODE: Resource<Node> = kind("", "Node", "nodes", false);
export const POD: Resource<Pod> = kind("", "Pod", "pods", true);
export const SERVICE_ACCOUNT: Resource<ServiceAccount> = kind(
  "",
  "ServiceAccount",
  "serviceaccounts",
  true,
);
export const CONFIG_MAP: Resource<ConfigMap> = kind("", "ConfigMap", "configmaps", true);
export const SECRET: Resource<Secret> = kind("", "Secret", "secrets", true);
export const SERVICE: Resource<Service> = kind("", "Service", "services", true);
export const EVENT: Resource<Event> = kind("", "Event", "events", true);
export const DAEMON_SET: Resource<DaemonSet> = kind("apps", "DaemonSet", "daemonsets", true);
export const DEPLOYMENT: Resource<Deployment> = kind("apps", "Deployment", "deployments", true);
export const LEASE: Resource<Lease> = kind("coordination.k8s.io", "Lease", "leases", true);
export const NETWORK_POLICY: Resource<NetworkPolicy> = kind(
  "networking.k8s.io",
  "NetworkPolicy",
  "networkpolicies",
  true,
);
/** Untyped: the operator writes CRDs as plain values (see `custom_resource_definition.ts`). */
export const CUSTOM_RESOURCE_DEFINITION: Resource<Unstructured> = kind(
  "apiextensions.k8s.io",
  "CustomResourceDefinition",
  "customresourcedefinitions",
  false,
);
export const ROLE: Resource<Role> = kind("rbac.authorization.k8s.io", "Role", "roles", true);
export const ROLE_BINDING: Resource<RoleBinding> = kind(
  "rbac.authorization.k8s.io",
  "RoleBinding",
  "rolebindings",
  true,
);
export const CLUSTER_ROLE: Resource<ClusterRole> = kind(
  "rbac.authorization.k8s.io",
  "ClusterRole",
  "clusterroles",
  false,
);
export const CLUSTER_ROLE_BINDING: Resource<ClusterRoleBinding> = kind(
  "rbac.authorization.k8s.io",
  "ClusterRoleBinding",
  "clusterrolebindings",
  false,
);
export const VALIDATING_WEBHOOK_CONFIGURATION: Resource<ValidatingWebhookConfiguration> = kind(
  "admissionregistration.k8s.io",
  "ValidatingWebhookConfiguration",
  "validatingwebhookconfigurations",
  false,
);
export const MUTATING_WEBHOOK_CONFIGURATION: Resource<MutatingWebhookConfiguration> = kind(
  "admissionregistration.k8s.io",
  "MutatingWebhookConfiguration",
  "mutatingwebhookconfigurations",
  false,
);
