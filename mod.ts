/**
 * The public API for plugin authors: what a plugin, its CRD and its tests need, and the few parts
 * to run one's own operator binary. Everything else (informers, queues, the applier, leader
 * election, the client's parts) is the "hard mode" behind `runtime/mod.ts` and `kube/mod.ts`.
 */

// Defining a plugin, what it returns, what it may throw.
export {
  definePlugin,
  generationChanged,
  PermanentError,
  TemporaryError,
} from "./runtime/plugin/mod.ts";
export type {
  AdmissionContext,
  AdmissionRequest,
  AdmissionVerdict,
  ChildProblem,
  MapContext,
  NamespacedName,
  Outcome,
  OwnedKind,
  Permission,
  Plugin,
  PluginSpec,
  ReconcileContext,
  StatusOf,
  Verb,
  Watch,
} from "./runtime/plugin/mod.ts";
export type { CacheReader, StoreChange } from "./runtime/cache/mod.ts";
export type { EventInput, EventRecorder } from "./runtime/observe/mod.ts";
export { type Conversion, ConversionError } from "./runtime/webhooks/mod.ts";
export { objectProblems, schemaProblems } from "./runtime/webhooks/mod.ts";

// Status conditions, and whose a child is.
export {
  type Condition,
  type ConditionInput,
  CONDITIONS_SCHEMA,
  mergeConditions,
} from "./runtime/plugin/mod.ts";
export { controllerReference } from "./runtime/reconcile/mod.ts";
export {
  childProblem,
  controllerOf,
  type Ownership,
  ownershipOf,
  ownershipProblem,
} from "./runtime/reconcile/mod.ts";
export { type ObjectRef, objectRef, refTo } from "./kube/object_ref.ts";

// Kinds: the built-ins, your own, and their CRDs.
export * from "./kube/kinds.ts";
export { apiVersionOf, type Resource, scoped } from "./kube/resource.ts";
export type {
  KubeObject,
  ObjectOf,
  ObjectTypeOf,
  OwnerReference,
  Unstructured,
} from "./kube/object.ts";
export { customResourceDefinition, type OpenApiSchema } from "./kube/custom_resource_definition.ts";
export { ApiError, isApiError } from "./kube/errors.ts";

// Testing a plugin without a cluster (with one: testing/mod.ts).
export { reconcileOnce, type ReconcileOnceOptions } from "./testing/reconcile_once.ts";

// Running an operator of your own: plugins/README.md, "Writing a plugin in your own repository".
export { KubeClient } from "./kube/client.ts";
export { loadClusterConfig } from "./kube/load_config.ts";
export { Manager, shutdownSignal } from "./runtime/manager.ts";
export { setupLogging } from "./runtime/observe/mod.ts";
export type { Logger } from "./runtime/observe/mod.ts";
export type { Registry } from "./runtime/observe/mod.ts";
