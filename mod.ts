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
  PLUGIN_API_VERSION,
  reads,
  TemporaryError,
  watch,
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
  PluginApiVersion,
  PluginSpec,
  Reads,
  ReconcileContext,
  StatusOf,
  Verb,
  Watch,
} from "./runtime/plugin/mod.ts";
export type { CacheListOptions, CacheReader, StoreChange } from "./runtime/cache/mod.ts";
export { UndeclaredReadError } from "./runtime/cache/mod.ts";
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
export { type KindOf, type ObjectRef, objectRef, refTo } from "./kube/object_ref.ts";

// Kinds: the built-ins, your own, and their CRDs.
export * from "./kube/kinds.ts";
export type * from "./kube/object_types.ts";
export { apiVersionOf, type Resource, scoped } from "./kube/resource.ts";
export type {
  KubeObject,
  ObjectList,
  ObjectMeta,
  ObjectOf,
  ObjectTypeOf,
  OwnerReference,
  Stored,
  StoredMeta,
  Unstructured,
} from "./kube/object.ts";
export {
  type CrdOptions,
  customResourceDefinition,
  type OpenApiSchema,
  type PrinterColumn,
} from "./kube/custom_resource_definition.ts";
export { ApiError, isApiError, type Status, type StatusCause } from "./kube/errors.ts";

// Testing a plugin without a cluster (with one: testing/mod.ts).
export {
  reconcileOnce,
  type ReconcileOnceOptions,
  type ReconcileOnceResult,
} from "./testing/reconcile_once.ts";

// Running an operator of your own: plugins/README.md, "Writing a plugin in your own repository".
export {
  defineOperator,
  type EstablishedNames,
  type OperatorIdentity,
  type OperatorIdentityInit,
  PTEMPLATE_OPERATOR,
} from "./runtime/identity/mod.ts";
export { type ClientOptions, KubeClient } from "./kube/client.ts";
export type {
  ApplyOptions,
  DeleteOptions,
  ListOptions,
  RequestOptions,
  WatchOptions,
  WriteOptions,
} from "./kube/request_options.ts";
export type { RequestInit } from "./kube/request_sender.ts";
export type { WatchEvent } from "./kube/watch.ts";
export type { WriteFence } from "./kube/write_fence.ts";
export type { ClusterConfig, ExecConfig } from "./kube/cluster_config.ts";
export { loadClusterConfig, type LoadOptions } from "./kube/load_config.ts";
export { Manager, type ManagerEndpoints, type ManagerOptions } from "./runtime/manager.ts";
export {
  type DryRunObject,
  DryRunReport,
  type WouldChange,
} from "./runtime/reconcile/dry_run_report.ts";
export { shutdownSignal } from "./runtime/shutdown_signal.ts";
export { setupLogging } from "./runtime/observe/mod.ts";
export type {
  AccessAttributes,
  BindAddress,
  ConnectionLimits,
  Counter,
  Family,
  Gauge,
  Histogram,
  HistogramValue,
  Labels,
  LogFormat,
  Logger,
  LogLevel,
  Metric,
  Registry,
  Requester,
  RequestLimits,
  ServerLimits,
  ServingCertificate,
} from "./runtime/observe/mod.ts";
export type { WriteLoopGuardOptions } from "./runtime/reconcile/mod.ts";
export type { ConnectionCheckOptions } from "./kube/connection_health.ts";
export type { RateLimit } from "./kube/rate_limiter.ts";
export type { Requirement, Selector } from "./runtime/cache/mod.ts";
