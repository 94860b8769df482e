/**
 * Runs a plugin's `reconcile` once against objects you give it and returns the Outcome: the way to
 * test a plugin's logic without a cluster. Imported from `mod.ts`, beside `definePlugin` (a plugin's
 * unit test needs nothing of `testing/`, which is the control plane). What the runtime does with the Outcome (apply, prune,
 * ownership, status) is tested against a real API server; this is only the plugin's part.
 */
import type { KubeClient } from "../kube/client.ts";
import type { KubeObject, Stored } from "../kube/object.ts";
import { apiVersionOf, type Resource } from "../kube/resource.ts";
import { type EventInput, log, Registry } from "../runtime/observe/mod.ts";
import {
  type ChildProblem,
  declaredReads,
  type Outcome,
  type Plugin,
  type ReconcileContext,
} from "../runtime/plugin/mod.ts";
import {
  type CacheReader,
  matchesSelector,
  parseSelector,
  Store,
  strictObject,
  strictReader,
} from "../runtime/cache/mod.ts";

/** The world `reconcileOnce` shows the plugin. */
export interface ReconcileOnceOptions {
  /**
   * The world the plugin's cache shows, objects of any kinds (with `apiVersion` and `kind`); the
   * object being reconciled is in it too. A scoped resource shows only those its selectors match.
   */
  objects?: KubeObject[];
  /** Which kinds the API server serves; default all. */
  installed?: (resource: Resource) => boolean;
  /** What `problems()` returns: children the runtime could not write last time. */
  problems?: ChildProblem[];
}

/**
 * What one reconcile did: its Outcome, Events and metrics. The Outcome is typed by the plugin's
 * kind, so `outcome.status` has the kind's status type (its generated `*_types.ts`): a test reads
 * `outcome.status?.configMap` without a cast, and a misspelt field does not compile.
 */
export interface ReconcileOnceResult<T extends KubeObject = KubeObject> {
  /** What `reconcile` returned (`{}` for nothing). */
  outcome: Outcome<T>;
  /** The Events it recorded, in order. */
  events: (EventInput & { object: string })[];
  /** The metrics registry it was given, to read what it counted. */
  metrics: Registry;
}

/**
 * Calls `plugin.reconcile(object)` once with a context whose cache holds `options.objects`. The
 * object is handed over as stored (see `asStored`): with a uid, and a namespace if its kind has one.
 * A read of a field of a kind the plugin declares `reads` of, outside what it declares, throws an
 * UndeclaredReadError naming the field (the runtime's cache would not have kept it).
 *
 * @example
 * ```ts
 * import { CONFIG_MAP, definePlugin, reconcileOnce } from "ptemplate-operator/mod.ts";
 *
 * const counter = definePlugin({
 *   name: "counter",
 *   for: CONFIG_MAP,
 *   writesStatus: false,
 *   reconcile: (cm, { cache }) => {
 *     const others = cache(CONFIG_MAP).list({ namespace: cm.metadata.namespace });
 *     return { requeueAfterMs: others.length * 1000 };
 *   },
 * });
 * const cm = (name: string) => ({
 *   apiVersion: "v1" as const,
 *   kind: "ConfigMap" as const,
 *   metadata: { name, namespace: "n" },
 * });
 * const { outcome } = await reconcileOnce(counter, cm("a"), { objects: [cm("b")] });
 * if (outcome.requeueAfterMs !== 2000) throw new Error("a and b are in the cache");
 * ```
 */
export async function reconcileOnce<T extends KubeObject>(
  plugin: Plugin<T>,
  object: T,
  options: ReconcileOnceOptions = {},
): Promise<ReconcileOnceResult<T>> {
  const stored = asStored(plugin.for, object);
  const world = [stored, ...(options.objects ?? []).filter((o) => o !== object)];
  const events: ReconcileOnceResult<T>["events"] = [];
  const metrics = new Registry();
  const context: ReconcileContext = {
    client: noClient(),
    cache: <R extends KubeObject, N extends boolean>(resource: Resource<R, N>) => {
      const store = new Store<R>(resource);
      for (const candidate of world) {
        if (isOf(candidate, resource)) store.upsert(candidate as R);
      }
      const fields = declaredReads(plugin, resource);
      const reader = store as CacheReader<R, N>;
      return fields
        ? strictReader(reader, { plugin: plugin.name, kind: resource.kind, projection: { fields } })
        : reader;
    },
    installed: options.installed ?? (() => true),
    problems: () => options.problems ?? [],
    log: log("reconcile-once", plugin.name),
    events: {
      record: (about, event) =>
        events.push({
          ...event,
          object: [about.metadata?.namespace, about.metadata?.name].filter(Boolean).join("/"),
        }),
    },
    metrics,
    signal: new AbortController().signal,
  };
  const fields = declaredReads(plugin, plugin.for);
  const given = fields
    ? strictObject(stored, { plugin: plugin.name, kind: plugin.for.kind, projection: { fields } })
    : stored;
  const outcome = (await plugin.reconcile(given, context)) ?? {};
  return { outcome, events, metrics };
}

/**
 * `object` as the API server would hand it over: a name it must have; a uid made up from the name
 * when it has none; `default` as the namespace of a namespaced kind when it names none.
 */
function asStored<T extends KubeObject>(resource: Resource, object: T): Stored<T> {
  const meta = object.metadata ?? {};
  if (!meta.name) throw new TypeError("reconcileOnce: the object needs a metadata.name");
  const namespace = resource.namespaced ? meta.namespace ?? "default" : undefined;
  return {
    ...object,
    metadata: { ...meta, namespace, uid: meta.uid ?? `uid-of-${meta.name}` },
  } as Stored<T>;
}

/** Whether `object` is of `resource`'s kind and passes its selectors. */
function isOf(object: KubeObject, resource: Resource): boolean {
  if (object.kind !== resource.kind || object.apiVersion !== apiVersionOf(resource)) return false;
  const labels = object.metadata?.labels ?? {};
  if (resource.labelSelector && !matchesSelector(parseSelector(resource.labelSelector), labels)) {
    return false;
  }
  return matchesFields(object, resource.fieldSelector ?? "");
}

/** A field selector of `path=value` and `path!=value` terms, as the API server reads it. */
function matchesFields(object: KubeObject, selector: string): boolean {
  for (const term of selector.split(",").filter(Boolean)) {
    const match = /^([^!=]+)(!=|==|=)(.*)$/.exec(term);
    if (!match) throw new TypeError(`field selector "${selector}": cannot read "${term}"`);
    const [, path, op, value] = match;
    let field: unknown = object;
    for (const part of path.split(".")) field = (field as Record<string, unknown>)?.[part];
    const equal = String(field ?? "") === value;
    if (op === "!=" ? equal : !equal) return false;
  }
  return true;
}

/** A client that says why it cannot be used here. */
function noClient(): KubeClient {
  return new Proxy({}, {
    get: (_, method) => () => {
      throw new Error(
        `reconcileOnce has no API server (the plugin called client.${String(method)}): ` +
          "test this plugin against a control plane (testing/integration_test_case.ts)",
      );
    },
  }) as KubeClient;
}
