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
} from "./runtime/plugin.ts";
export type {
  AdmissionContext,
  AdmissionRequest,
  AdmissionVerdict,
  ChildProblem,
  MapContext,
  ObjectRef,
  Outcome,
  OwnedKind,
  Permission,
  Plugin,
  PluginSpec,
  ReconcileContext,
  StatusOf,
  Verb,
  Watch,
} from "./runtime/plugin.ts";
export type { CacheReader, StoreChange } from "./runtime/store.ts";
export type { EventInput, EventRecorder } from "./runtime/events.ts";
export { type Conversion, ConversionError } from "./runtime/webhook_server.ts";
export { objectProblems, schemaProblems } from "./runtime/schema_check.ts";

// Status conditions, and whose a child is.
export {
  type Condition,
  type ConditionInput,
  CONDITIONS_SCHEMA,
  mergeConditions,
} from "./runtime/conditions.ts";
export { controllerReference } from "./runtime/desired_state.ts";
export {
  controllerOf,
  type OwnerReference,
  type Ownership,
  ownershipOf,
  ownershipProblem,
} from "./runtime/ownership.ts";

// Kinds: the built-ins, your own, and their CRDs.
export * from "./kube/kinds.ts";
export { apiVersionOf, type Resource, scoped } from "./kube/resource.ts";
export type { KubeObject, Unstructured } from "./kube/client.ts";
export { customResourceDefinition, type OpenApiSchema } from "./kube/custom_resource_definition.ts";
export { ApiError, isApiError } from "./kube/errors.ts";

// Testing a plugin without a cluster (with one: testing/mod.ts).
export { reconcileOnce, type ReconcileOnceOptions } from "./testing/reconcile_once.ts";

// Running an operator of your own: plugins/README.md, "Writing a plugin in your own repository".
export { KubeClient } from "./kube/client.ts";
export { loadClusterConfig } from "./kube/load_config.ts";
export { Manager, shutdownSignal } from "./runtime/manager.ts";
export { setupLogging } from "./runtime/logging.ts";
export type { Logger } from "./runtime/logging.ts";
export type { Registry } from "./runtime/metrics.ts";
