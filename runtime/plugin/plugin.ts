/** The plugin API: what a reconciler plugin declares, what it returns, and what it may throw. */
import type { KubeClient } from "../../kube/client.ts";
import type { KubeObject, Stored, Unstructured } from "../../kube/object.ts";
import type { EventRecorder, Logger, Registry } from "../observe/mod.ts";
import type { Resource } from "../../kube/resource.ts";
import { parseFieldPath } from "./field_path.ts";
import { type CacheReader, projector, type StoreChange } from "../cache/mod.ts";
import type { AdmissionContext, AdmissionRequest, AdmissionVerdict } from "./admission.ts";
import { ownedKinds } from "./declared.ts";
import type { Reads, Watch } from "./watches.ts";
import {
  isPluginApiVersion,
  PLUGIN_API_VERSION,
  type PluginApiVersion,
} from "./plugin_api_version.ts";

/**
 * Which object of the plugin's kind to reconcile, as controller-runtime's `NamespacedName`: its
 * namespace (absent for a cluster-scoped kind) and name. An `ObjectRef` is one too.
 */
export interface NamespacedName {
  /** Absent for a cluster-scoped kind. */
  namespace?: string;
  /** The object's name. */
  name: string;
}

/** A kind a plugin creates, and how the runtime may treat existing objects of it. */
export interface OwnedKind {
  /** The kind. */
  resource: Resource;
  /**
   * Take over an object named like a child that has no controller (adding our controller
   * reference) instead of reporting it; default false. Only for kinds whose objects people
   * create by hand expecting the operator to take them on.
   */
  adopt?: boolean;
  /**
   * When an apply is refused because an immutable field must change (a DaemonSet's selector),
   * delete the child and create it anew, with an Event; default false. Its dependents (a
   * DaemonSet's pods) are deleted and recreated with it.
   */
  recreateOnImmutableChange?: boolean;
  /**
   * Fields of this kind that other field managers may set on a child, as paths
   * (`spec.replicas`, `spec.template.metadata.annotations["example.com/x"]`, `[*]` for any list
   * item). Everything else they add to a child's body is removed, with a Warning Event naming
   * the field and who set it (see foreign_fields.ts); metadata other than owner references,
   * status, subresources such as `scale`, and `kubectl rollout restart`'s annotation are always
   * left alone. Too little here makes the operator fight a controller that legitimately sets a
   * field (the write-loop guard then pauses the child); too much leaves what someone added.
   */
  tolerate?: string[];
}

/** What went wrong with a child of one parent: another plugin of the same kind can report it. */
export interface ChildProblem {
  /** The plugin that could not write it. */
  plugin: string;
  /** The child's kind. */
  kind: string;
  /** The child's name (in its parent's namespace). */
  name: string;
  /**
   * Why: its name is taken by an object someone else controls, or nobody does; the API server
   * refused it; or the write-loop guard paused it.
   */
  reason: "ChildOwnedElsewhere" | "ChildNameTaken" | "ChildRefused" | "WriteLoopDetected";
  /** One sentence that names the object and what to do about it. */
  message: string;
}

/** What a plugin may be granted on a kind (RBAC's verbs). */
export type Verb = "get" | "list" | "watch" | "create" | "update" | "patch" | "delete";

/** Access a plugin asks for explicitly, for the requests it makes itself through `client`. */
export interface Permission {
  /** The kind. */
  resource: Resource;
  /** What it may do. */
  verbs: Verb[];
  /** e.g. `status`. */
  subresource?: string;
}

/**
 * What a reconcile wants the world to look like. The runtime makes it so: it server-side applies
 * `children` under the plugin's field manager with a controller owner reference (skipping the
 * request when the cache already matches), deletes children it created earlier that are no
 * longer listed, and writes `status` with `observedGeneration` (skipping it when unchanged).
 */
export interface Outcome<T extends KubeObject = KubeObject> {
  /** Every child that should exist, of the kinds in `owns`. Omit to leave children alone. */
  children?: (KubeObject | Unstructured)[];
  /** The status to report (the fields this plugin owns), of `T`'s status type. Omit to leave it. */
  status?: StatusOf<T>;
  /** Visit again after this long even if nothing changes (a plain delay). */
  requeueAfterMs?: number;
}

/** The type of `T`'s status: what its plugin may report. */
export type StatusOf<T> = T extends { status?: infer S } ? NonNullable<S> : Record<string, unknown>;

/** What a reconcile gets besides the object. */
export interface ReconcileContext {
  /** For the rare imperative step; prefer returning an Outcome. */
  client: KubeClient;
  /** Cached reads of any kind the plugin declared (for, owns, watches), or others on demand. */
  cache<R extends KubeObject, N extends boolean>(resource: Resource<R, N>): CacheReader<R, N>;
  /** True when the API server serves this kind (e.g. its CRD is installed). */
  installed(resource: Resource): boolean;
  /**
   * The object's children that its plugins could not write at their last attempt (a name taken
   * by someone else's object, a refusal by the API server, a write loop); a change to these
   * reconciles the object again, so a status plugin can report them.
   */
  problems(): ChildProblem[];
  /** A logger with the plugin and object on every line. */
  log: Logger;
  /** Kubernetes Events about the object (or others), written in the background. */
  events: EventRecorder;
  /** The process's metrics registry, for the plugin's own series. */
  metrics: Registry;
  /** Aborts when the reconcile must stop early (shutdown, lost leadership). */
  signal: AbortSignal;
}

/** Filters changes of the plugin's own kind before they reach the queue. */
export type ChangeFilter<T extends KubeObject, N extends boolean = boolean> = (
  change: StoreChange<Stored<T, N>>,
) => boolean;

/**
 * What a plugin declares. `T` is the type of the objects of its kind, `N` whether that kind is
 * namespaced; both come from `for`.
 */
export interface PluginSpec<T extends KubeObject = KubeObject, N extends boolean = boolean> {
  /** Unique; the controller name in metrics and logs, and the field manager of its writes. */
  name: string;
  /** The kind it reconciles; its objects' type is `T`. */
  for: Resource<T, N>;
  /**
   * Kinds it creates; their changes reconcile the controlling owner. A kind alone, or with
   * options (`{ resource, adopt, recreateOnImmutableChange }`).
   */
  owns?: (Resource | OwnedKind)[];
  /** Other kinds whose changes reconcile objects through a mapping function. */
  watches?: Watch[];
  /**
   * Whether `reconcile` returns a status; default true. With false the plugin is granted no
   * `patch` of its kind's status (`ptemplate-operator rbac`), and returning one is an error.
   */
  writesStatus?: boolean;
  /**
   * What the plugin reads of the kinds it uses (`for`, `owns`, `watches`), besides metadata,
   * which is always kept. The cache of a kind that every plugin using it declares keeps only
   * what they declare (and, for kinds written as children, the fields the runtime compares: what
   * any field manager set, so a hand edit is still seen and put back); a kind declared with no
   * fields is listed and watched as metadata alone. A kind some plugin uses without declaring it
   * is cached whole. A plugin writing status reads its own kind's `status` without saying so.
   * In production a field not kept reads as `undefined`; in tests (`reconcileOnce`, and
   * `runManager`'s `strictReads`) reading a field not declared throws an UndeclaredReadError
   * that names it. Too little here is that error; too much is memory per cached object.
   */
  reads?: Reads[];
  /**
   * Access for the requests the plugin makes itself through `context.client`, beyond what `for`,
   * `owns`, `watches` and `finalize` imply; `ptemplate-operator rbac` grants exactly these.
   */
  permissions?: Permission[];
  /** Drops changes of `for` objects that need no reconcile, e.g. `generationChanged`. */
  filter?(change: StoreChange<Stored<T, N>>): boolean;
  /** Workers for this plugin; default 1. A key is never reconciled by two at once. */
  concurrency?: number;
  /**
   * Wait this long after a change before reconciling the object it concerns; changes meanwhile
   * join the same reconcile. A burst (children appearing, a rollout) then makes one reconcile and
   * one write instead of one per intermediate state; every reaction is that much later. Default
   * 0. Resyncs and the start of leadership are not delayed.
   */
  debounceMs?: number;
  /**
   * Level-based: told only *which* object, never why. Return the desired world (or nothing),
   * or throw: a `PermanentError` is reported and not retried until the object changes; anything
   * else is retried with per-key exponential backoff.
   */
  // Methods rather than function-typed fields: a Plugin<Ptemplate> is then also a Plugin, which
  // is what the manager takes (parameters of methods are compared both ways).
  reconcile(
    object: Stored<T, N>,
    context: ReconcileContext,
  ): Outcome<T> | void | Promise<Outcome<T> | void>;
  /**
   * Cleans up what the plugin made outside Kubernetes before its object goes. With it, the
   * runtime puts a finalizer (`finalizer`) on each object before its first reconcile; once the
   * object's deletion starts it calls `finalize` instead of `reconcile` until it returns without
   * throwing (retried with backoff, each failure a `FinalizeFailed` Warning Event), then removes
   * the finalizer and the API server deletes the object. Must be idempotent: it may run again
   * after a crash. Children need nothing: owner references remove them.
   */
  finalize?(object: Stored<T, N>, context: ReconcileContext): void | Promise<void>;
  /**
   * The finalizer's name; default `<the operator's finalizer domain>/<plugin name>`
   * (OperatorIdentity.finalizerDomain: ours is 0.2's `operator.pt.example.com/<plugin name>`, and
   * objects holding `operator.ptemplate.dev/<plugin name>` are finalized as well).
   */
  finalizer?: string;
  /**
   * Defaulting admission (a mutating webhook, `/mutate/<name>`): return the object as it should
   * be stored. Prefer schema defaults; this is for defaults that depend on other objects.
   */
  default?(object: T, context: AdmissionContext): T | void | Promise<T | void>;
  /**
   * What `default` and `validate` read through `context.client`; granted with the webhooks
   * (`ptemplate-operator rbac --webhooks`), as admission runs only when they are served.
   */
  admissionReads?: Permission[];
  /**
   * Validating admission (`/validate/<name>`): warnings for what will go wrong, a refusal only
   * for what could never work (the schema and CEL refuse the rest, without a webhook).
   */
  validate?(
    request: AdmissionRequest<T>,
    context: AdmissionContext,
  ): AdmissionVerdict | void | Promise<AdmissionVerdict | void>;
  /**
   * Called when an object's key comes up and the object is gone, to drop what the plugin keeps
   * per object (metrics series, say). Children need nothing: owner references remove them.
   */
  onDeleted?: (ref: NamespacedName, context: { log: Logger; metrics: Registry }) => void;
  /**
   * The plugin API version the plugin was written against (`major.minor`); default the version
   * of the `mod.ts` that `definePlugin` came from. Declare the version your `mod.ts` had when you
   * built the plugin (`ptemplate-operator version` prints it) so that a binary serving an older
   * or incompatible API refuses it at start instead of failing in the middle of a reconcile.
   */
  pluginApi?: PluginApiVersion;
  /**
   * `"worker"`: run this plugin's code (reconcile, finalize, watch mappings and filters,
   * admission) in a Worker in a process of its own, where a reconcile past its deadline or a heap
   * past its cap ends that process (SIGKILL) instead of the operator. Only for plugins loaded
   * with `--plugin` (the Worker loads the same module). Default: as `--plugin-isolation` says.
   */
  isolation?: "worker";
  /**
   * The most one `reconcile` or `finalize` may take, in milliseconds; default
   * `--reconcile-timeout` (60 s). Past it the visit is abandoned: its writes are refused from then
   * on, its `signal` aborts, its worker slot is freed, and the key is retried with backoff; in a
   * Worker, the Worker's process is killed and another started. After three such timeouts in a
   * row a key is quarantined until its object changes. Too short abandons reconciles that are merely slow (an
   * API server answering in seconds); too long keeps a stuck key's slot that long.
   */
  reconcileTimeoutMs?: number;
  /**
   * In a Worker, the most its JavaScript heap may grow to, in MiB; default `--plugin-heap-limit`
   * (256). Past it the Worker is ended as for a timeout. Too small ends a plugin that merely
   * holds many objects at once; too large lets a leak take that much of the pod's memory.
   */
  heapLimitMb?: number;
}

/** A plugin, as registered with the manager. */
export type Plugin<T extends KubeObject = KubeObject, N extends boolean = boolean> = Readonly<
  PluginSpec<T, N>
>;

/**
 * The most workers one plugin may have. Reconciles mostly wait on the API server, so more than a
 * few dozen only adds pressure on it (and the client's rate limit caps the requests anyway).
 */
export const MAX_CONCURRENCY = 100;

/**
 * Declares a plugin; checks the declaration so mistakes surface at start-up, not at 3 am.
 *
 * @example A ConfigMap per Greeting: the children and status it wants, nothing else.
 * ```ts
 * import { CONFIG_MAP, definePlugin, type KubeObject, type Resource } from "ptemplate-operator/mod.ts";
 *
 * interface Greeting extends KubeObject {
 *   spec: { message: string };
 *   status?: { configMap?: string };
 * }
 * const GREETING: Resource<Greeting, true> = {
 *   group: "example.ptemplate.dev",
 *   version: "v1",
 *   kind: "Greeting",
 *   plural: "greetings",
 *   namespaced: true,
 * };
 * export const greetingPlugin = definePlugin({
 *   name: "greeting",
 *   for: GREETING,
 *   owns: [CONFIG_MAP],
 *   reconcile: (greeting) => ({
 *     children: [{
 *       apiVersion: "v1",
 *       kind: "ConfigMap",
 *       metadata: { name: `${greeting.metadata.name}-greeting` },
 *       data: { message: greeting.spec.message },
 *     }],
 *     status: { configMap: `${greeting.metadata.name}-greeting` },
 *   }),
 * });
 * ```
 */
export function definePlugin<T extends KubeObject = KubeObject, N extends boolean = boolean>(
  spec: PluginSpec<T, N>,
): Plugin<T, N> {
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(spec.name)) {
    throw new TypeError(
      `plugin name "${spec.name}" must be lower-case letters, digits and dashes (it is a field manager)`,
    );
  }
  if (
    spec.finalizer !== undefined &&
    !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?\/[-A-Za-z0-9_.]+$/.test(spec.finalizer)
  ) {
    throw new TypeError(
      `plugin ${spec.name}: finalizer "${spec.finalizer}" must be a qualified name, e.g. example.com/cleanup`,
    );
  }
  if (spec.finalizer !== undefined && !spec.finalize) {
    throw new TypeError(`plugin ${spec.name}: a finalizer name without a finalize function`);
  }
  for (const declared of spec.reads ?? []) {
    try {
      projector({ fields: declared.fields });
    } catch (error) {
      throw new TypeError(
        `plugin ${spec.name}: reads of ${declared.resource.kind}: ${(error as Error).message}`,
      );
    }
  }
  for (const owned of ownedKinds(spec)) {
    try {
      owned.tolerate?.forEach(parseFieldPath);
    } catch (error) {
      throw new TypeError(
        `plugin ${spec.name}: ${owned.resource.kind} tolerate: ${(error as Error).message}`,
      );
    }
  }
  const concurrency = spec.concurrency ?? 1;
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > MAX_CONCURRENCY) {
    throw new RangeError(
      `plugin ${spec.name}: concurrency must be a whole number from 1 to ${MAX_CONCURRENCY}, ` +
        `not ${concurrency}`,
    );
  }
  const pluginApi = spec.pluginApi ?? PLUGIN_API_VERSION;
  if (!isPluginApiVersion(pluginApi)) {
    throw new TypeError(
      `plugin ${spec.name}: pluginApi must be written major.minor (e.g. "${PLUGIN_API_VERSION}"), ` +
        `not ${JSON.stringify(pluginApi)}`,
    );
  }
  for (
    const [field, value] of [
      ["reconcileTimeoutMs", spec.reconcileTimeoutMs],
      ["heapLimitMb", spec.heapLimitMb],
    ] as const
  ) {
    if (value !== undefined && !(Number.isFinite(value) && value > 0)) {
      throw new RangeError(`plugin ${spec.name}: ${field} must be a positive number, not ${value}`);
    }
  }
  const plugin = Object.freeze({ ...spec, pluginApi });
  DEFINED.add(plugin);
  return plugin;
}

/** Every plugin this module's `definePlugin` made. */
const DEFINED = new WeakSet<object>();

/**
 * True when `value` was made by this very `definePlugin`: a plugin that bundled its own copy of
 * the runtime carries another's, whose types and behaviour may differ from ours.
 */
export function isDefinedHere(value: unknown): boolean {
  return typeof value === "object" && value !== null && DEFINED.has(value);
}

/** True when `value` has the shape of a plugin (a name, a kind, a reconcile), made by anyone. */
export function looksLikePlugin(value: unknown): value is Plugin {
  const v = value as Partial<Plugin> | null;
  return typeof v === "object" && v !== null && typeof v.name === "string" &&
    typeof v.reconcile === "function" && typeof v.for === "object";
}
