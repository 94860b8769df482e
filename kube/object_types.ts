/**
 * The objects of the built-in kinds, as the kubernetes-types package declares them (from the
 * API's own OpenAPI), under the names plugins use: `import { type Pod } from "…/mod.ts"`.
 * Their fields are documented in that package; each alias is marked `@ignore` so that
 * `deno doc` points there instead of copying that whole package (and its missing docs) into ours.
 */
import type * as admission from "kubernetes-types/admissionregistration/v1.d.ts";
import type * as apps from "kubernetes-types/apps/v1.d.ts";
import type * as coordination from "kubernetes-types/coordination/v1.d.ts";
import type * as core from "kubernetes-types/core/v1.d.ts";
import type * as networking from "kubernetes-types/networking/v1.d.ts";
import type * as rbac from "kubernetes-types/rbac/v1.d.ts";

/**
 * kubernetes-types' `MutatingWebhookConfiguration` (admissionregistration/v1).
 * @ignore
 */
export type MutatingWebhookConfiguration = admission.MutatingWebhookConfiguration;
/**
 * kubernetes-types' `ValidatingWebhookConfiguration` (admissionregistration/v1).
 * @ignore
 */
export type ValidatingWebhookConfiguration = admission.ValidatingWebhookConfiguration;
/**
 * kubernetes-types' `DaemonSet` (apps/v1).
 * @ignore
 */
export type DaemonSet = apps.DaemonSet;
/**
 * kubernetes-types' `Deployment` (apps/v1).
 * @ignore
 */
export type Deployment = apps.Deployment;
/**
 * kubernetes-types' `Lease` (coordination/v1).
 * @ignore
 */
export type Lease = coordination.Lease;
/**
 * kubernetes-types' `ConfigMap` (core/v1).
 * @ignore
 */
export type ConfigMap = core.ConfigMap;
/**
 * kubernetes-types' `Event` (core/v1).
 * @ignore
 */
export type Event = core.Event;
/**
 * kubernetes-types' `Namespace` (core/v1).
 * @ignore
 */
export type Namespace = core.Namespace;
/**
 * kubernetes-types' `Node` (core/v1).
 * @ignore
 */
export type Node = core.Node;
/**
 * kubernetes-types' `Pod` (core/v1).
 * @ignore
 */
export type Pod = core.Pod;
/**
 * kubernetes-types' `Secret` (core/v1).
 * @ignore
 */
export type Secret = core.Secret;
/**
 * kubernetes-types' `Service` (core/v1).
 * @ignore
 */
export type Service = core.Service;
/**
 * kubernetes-types' `ServiceAccount` (core/v1).
 * @ignore
 */
export type ServiceAccount = core.ServiceAccount;
/**
 * kubernetes-types' `NetworkPolicy` (networking/v1).
 * @ignore
 */
export type NetworkPolicy = networking.NetworkPolicy;
/**
 * kubernetes-types' `ClusterRole` (rbac/v1).
 * @ignore
 */
export type ClusterRole = rbac.ClusterRole;
/**
 * kubernetes-types' `ClusterRoleBinding` (rbac/v1).
 * @ignore
 */
export type ClusterRoleBinding = rbac.ClusterRoleBinding;
/**
 * kubernetes-types' `Role` (rbac/v1).
 * @ignore
 */
export type Role = rbac.Role;
/**
 * kubernetes-types' `RoleBinding` (rbac/v1).
 * @ignore
 */
export type RoleBinding = rbac.RoleBinding;
