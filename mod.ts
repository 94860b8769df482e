/**
 * The API for plugin authors: what a plugin, its CRD and its unit test need. Start with
 * `definePlugin`; `plugins/README.md` is the guide.
 *
 * Two more entries: `operator.ts` for running an operator binary of your own (its identity, its
 * command line, the manager), and `runtime/mod.ts` and `kube/mod.ts`, the "hard mode" parts the
 * runtime is built from (informers, queues, the applier, leader election, the client's options),
 * where the types a plugin meets only through its context (a `KubeClient`'s options, a
 * `Registry`'s metrics) are documented.
 */

// A plugin: what it declares, what its reconcile returns, what it may throw.
export {
  definePlugin,
  generationChanged,
  PermanentError,
  reads,
  TemporaryError,
  watch,
} from "./runtime/plugin/mod.ts";
export type {
  AdmissionContext,
  AdmissionRequest,
  AdmissionVerdict,
  ChildProblem,
  NamespacedName,
  Outcome,
  OwnedKind,
  Plugin,
  PluginSpec,
  ReconcileContext,
} from "./runtime/plugin/mod.ts";
export type { CacheReader, StoreChange } from "./runtime/cache/mod.ts";

// Status conditions, and whose a child is.
export {
  type Condition,
  type ConditionInput,
  CONDITIONS_SCHEMA,
  mergeConditions,
} from "./runtime/plugin/mod.ts";
export {
  childProblem,
  controllerOf,
  controllerReference,
  ownershipOf,
} from "./runtime/reconcile/mod.ts";
export { objectRef } from "./kube/object_ref.ts";

// Kinds: the built-ins plugins use most (every kind: kube/mod.ts), your own, and their CRDs.
export {
  CONFIG_MAP,
  DAEMON_SET,
  DEPLOYMENT,
  EVENT,
  NAMESPACE,
  NODE,
  POD,
  SECRET,
  SERVICE,
} from "./kube/kinds.ts";
export { apiVersionOf, type Resource, scoped } from "./kube/resource.ts";
export type { KubeObject, Stored, Unstructured } from "./kube/object.ts";
export {
  type CrdOptions,
  customResourceDefinition,
  type OpenApiSchema,
} from "./kube/custom_resource_definition.ts";
export { ConversionError, objectProblems } from "./runtime/webhooks/mod.ts";
export { isApiError } from "./kube/errors.ts";

// Testing a plugin without a cluster (with one: testing/mod.ts).
export { reconcileOnce, type ReconcileOnceResult } from "./testing/reconcile_once.ts";
