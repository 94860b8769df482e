/** The plugin API: what a reconciler plugin declares, what it returns, and what it may throw. */
import type { KubeClient } from "../../kube/client.ts";
import type { KubeObject, Stored, Unstructured } from "../../kube/object.ts";
import type { EventRecorder, Logger, Registry, Requester } from "../observe/mod.ts";
import type { Resource } from "../../kube/resource.ts";
import { parseFieldPath } from "./field_path.ts";
import { type CacheReader, projector, type StoreChange } from "../cache/mod.ts";
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
 * Another kind whose changes should reconcile some objects of the plugin's kind. Write it with
 * `watch(resource, { map })`, so that `map` and `filter` see the watched kind's type.
 */
export interface Watch<W extends KubeObject = KubeObject, N extends boolean = boolean> {
  /** The kind watched. */
  resource: Resource<W, N>;
  /** Which objects of the plugin's kind a change of `object` concerns (may read the cache). */
  map(object: Stored<W, N>, context: MapContext): NamespacedName[];
  /** Only changes that pass (e.g. a field the plugin reads changed); default all. */
  filter?(change: StoreChange<Stored<W, N>>): boolean;
  /**
   * The plugin works without this kind (it reports less). A cluster-scoped optional kind is not
   * watched when the operator is restricted to namespaces, where Roles cannot grant it; then
   * `installed()` says false for it and its cache is empty.
   */
  optional?: boolean;
  /**
   * When replicas split the keys (`--shards`): the uid of the object of the plugin's kind that
   * `object` belongs to (a consumer pod's Ptemplate, by a label holding its uid), so that each
   * replica caches only its own shards' objects of this kind. Undefined for an object that
   * belongs to none: every replica keeps those. Without it every replica caches the whole kind
   * (right for Nodes, which every shard reads). Filtered as objects arrive: each replica still
   * receives them all.
   */
  shardKey?(object: Stored<W, N>): string | undefined;
}

/**
 * The fields of one kind a plugin reads, besides metadata (always kept): see `PluginSpec.reads`.
 * Write it with `reads(resource, fields)`.
 */
export interface Reads {
  /** The kind (the same `Resource` the plugin names in `for`, `owns` or `watches`). */
  resource: Resource;
  /**
   * Dotted paths, each kept whole: `status`, `spec.nodeName`, `spec.containers[*].image` (`[*]`
   * for every item of a list). Empty: metadata alone (the API server then sends nothing more).
   */
  fields: string[];
}

/**
 * What a plugin reads of a kind besides metadata.
 *
 * @example A plugin that reads only the names of Pods: their cache holds metadata alone.
 * ```ts
 * import { POD, reads } from "ptemplate-operator/mod.ts";
 *
 * const podNames = reads(POD, []);
 * const podPhase = reads(POD, ["status.phase", "spec.nodeName"]);
 * if (podNames.fields.length || podPhase.resource !== POD) throw new Error("declared");
 * ```
 */
export function reads(resource: Resource, fields: string[]): Reads {
  return { resource, fields };
}

/** What `Watch.map` may use. */
export interface MapContext {
  /** Cached objects of a kind, typed by its `Resource`. */
  cache<R extends KubeObject, N extends boolean>(resource: Resource<R, N>): CacheReader<R, N>;
}

/**
 * A watch whose `map` and `filter` see objects of the watched kind, typed by its resource.
 *
 * @example Reconcile the Greeting a ConfigMap's label names.
 * ```ts
 * import { CONFIG_MAP, watch } from "ptemplate-operator/mod.ts";
 *
 * const byLabel = watch(CONFIG_MAP, {
 *   // `cm` is a ConfigMap as stored: its metadata has a name and a namespace.
 *   map: (cm) => {
 *     const greeting = cm.metadata.labels?.["example.com/greeting"];
 *     return greeting ? [{ namespace: cm.metadata.namespace, name: greeting }] : [];
 *   },
 *   filter: (change) => change.type !== "updated" || change.object.data !== change.old.data,
 * });
 * if (byLabel.resource !== CONFIG_MAP) throw new Error("watches ConfigMaps");
 * ```
 */
export function watch<W extends KubeObject, N extends boolean>(
  resource: Resource<W, N>,
  options: Omit<Watch<W, N>, "resource">,
): Watch<W, N> {
  return { resource, ...options };
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

/** One admission request for the plugin's kind, as the API server sent it. */
export interface AdmissionRequest<T extends KubeObject = KubeObject> {
  /** What the request does. */
  operation: "CREATE" | "UPDATE" | "DELETE" | "CONNECT";
  /** The request's namespace. */
  namespace?: string;
  /** The object's name (absent for a create with `generateName`). */
  name?: string;
  /** The object as it would be stored (absent for DELETE). */
  object?: T;
  /** The object as stored (UPDATE, DELETE). */
  oldObject?: T;
  /** True when nothing will be stored: have no side effects. */
  dryRun: boolean;
  /** Who asks, as the review says (see `userInfo`). */
  username?: string;
  /**
   * Who asks, as the review says. The API server does not authenticate itself to webhooks by
   * default, so this is a claim: trust it no further than `requesterMay` does.
   */
  userInfo?: Requester;
}

/** What validation says: warnings kubectl prints, and a refusal for an object that can never work. */
export interface AdmissionVerdict {
  /** Printed by kubectl; say what will go wrong, and how to fix it. */
  warnings?: string[];
  /**
   * Refuses the request with this message: name the field and the fix. The runtime judges it as
   * a change: a create is refused; an update only when the old object, validated as a create,
   * is not refused with the same words (so an object stored before a rule stays writable); a
   * delete, an update of an object being deleted, and an update of metadata or status alone,
   * never (they become warnings).
   */
  denied?: string;
}

/**
 * What admission may use. It runs on every replica, leader or not, so it reads and never writes;
 * the cache may still be syncing right after a start. Whoever reaches the webhook port can post a
 * review, so an answer must not tell them what they could not read themselves: look at another
 * object only when `requesterMay` says the requester could, and prefer the cache.
 */
export interface AdmissionContext {
  /**
   * For reads the cache does not hold. Admission's own client, with its own rate limit (10 a
   * second, 20 at once), apart from the reconcilers': a flood of reviews slows admission alone.
   */
  client: KubeClient;
  /** Cached reads, as in a reconcile (the cache may still be syncing right after a start). */
  cache<R extends KubeObject, N extends boolean>(resource: Resource<R, N>): CacheReader<R, N>;
  /** True when the API server serves this kind (e.g. its CRD is installed). */
  installed(resource: Resource): boolean;
  /**
   * Whether the review's requester may `verb` objects of `resource` (the one named, in the
   * namespace given), by a SubjectAccessReview (cached; false without a requester, or when the
   * API server cannot be asked now).
   */
  requesterMay(
    verb: Verb,
    resource: Resource,
    object?: { namespace?: string; name?: string },
  ): Promise<boolean>;
  /** A logger for admission. */
  log: Logger;
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

/**
 * A failure that retrying will not fix (e.g. an invalid spec); reported, not retried.
 *
 * @example
 * ```ts
 * import { PermanentError } from "ptemplate-operator/mod.ts";
 *
 * const error = new PermanentError("spec.size must be positive", { reason: "InvalidSpec" });
 * if (error.reason !== "InvalidSpec") throw new Error("the Event's reason");
 * ```
 */
export class PermanentError extends Error {
  /** Always `PermanentError`. */
  override readonly name = "PermanentError";
  /** A short CamelCase reason for the Event. */
  readonly reason: string;
  /** `message` names the field and the fix; `reason` is the Event's (default `ReconcileFailed`). */
  constructor(message: string, options: { reason?: string; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.reason = options.reason ?? "ReconcileFailed";
  }
}

/** A failure worth retrying; the same as throwing any other error, with an optional delay. */
export class TemporaryError extends Error {
  /** Always `TemporaryError`. */
  override readonly name = "TemporaryError";
  /** Retry after this long instead of the usual backoff. */
  readonly retryAfterMs?: number;
  /** `message` says what failed; `retryAfterMs` when to try again. */
  constructor(message: string, options: { retryAfterMs?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.retryAfterMs = options.retryAfterMs;
  }
}

/**
 * What `plugin` declared it reads of `resource` (with its own kind's `status` when it writes
 * status), or undefined when it declared nothing of it.
 */
export function declaredReads(
  plugin: Pick<PluginSpec, "reads" | "for" | "writesStatus">,
  resource: Resource,
): string[] | undefined {
  const same = (r: Resource) =>
    r.group === resource.group && r.version === resource.version &&
    r.plural === resource.plural && r.labelSelector === resource.labelSelector &&
    r.fieldSelector === resource.fieldSelector;
  const declared = (plugin.reads ?? []).filter((r) => same(r.resource));
  if (!declared.length) return undefined;
  const fields = declared.flatMap((r) => r.fields);
  if (same(plugin.for) && plugin.writesStatus !== false) fields.push("status");
  return [...new Set(fields)];
}

/** The plugin's owned kinds, each with its options. */
export function ownedKinds(plugin: Pick<PluginSpec, "owns">): OwnedKind[] {
  return (plugin.owns ?? []).map((owned) => "resource" in owned ? owned : { resource: owned });
}

/**
 * A filter that passes creations, deletions and spec changes, not status-only updates.
 *
 * @example
 * ```ts
 * import { generationChanged } from "ptemplate-operator/mod.ts";
 *
 * const old = { metadata: { name: "a", generation: 1 } };
 * const statusOnly = { metadata: { name: "a", generation: 1 }, status: { ready: true } };
 * if (generationChanged({ type: "updated", object: statusOnly, old })) throw new Error("filtered");
 * ```
 */
export function generationChanged<T extends KubeObject>(change: StoreChange<T>): boolean {
  if (change.type !== "updated") return true;
  return change.object.metadata?.generation !== change.old.metadata?.generation;
}
