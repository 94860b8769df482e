/**
 * Turns the caches' changes into the keys of a plugin's parents, each with its cause: the parent
 * itself changed, a child it controls did, a watched object mapped to it, an object that held a
 * name it wants went, another plugin could not write one of its children, a kind appeared. An
 * update that changed nothing the plugin reads (nor what the runtime acts on) visits no one.
 */
import type { KubeObject, Stored } from "../../kube/object.ts";
import { objectRef, ownerRefOf, refKey, refTo } from "../../kube/object_ref.ts";
import { apiVersionOf, type Resource } from "../../kube/resource.ts";
import { type InformerPool, relevantChange, type StoreChange } from "../cache/mod.ts";
import type { Logger } from "../observe/mod.ts";
import { declaredReads, ownedKinds, type Plugin } from "../plugin/mod.ts";
import { type PluginRunner, whenReady } from "../isolation/mod.ts";
import type { BlockedNames } from "./blocked_names.ts";
import type { BulkWrites } from "./bulk_writes.ts";
import { type Cause, cause, type CauseKind } from "./cause.ts";
import type { ChildProblems } from "./child_problems.ts";
import type { PluginView } from "./plugin_view.ts";
import { versionOf, type VisitNews } from "./visit_news.ts";

/** Where the routes send keys. */
export interface RouteSink {
  /** A change concerns `key`. */
  enqueue(key: string, cause: Cause): void;
  /** Every object of the plugin's kind must be looked at again. */
  enqueueAll(cause: Cause): void;
  /** The object of `key` left the cache. */
  gone(key: string): void;
}

/** What the routes read from and where they look. */
export interface RouteDeps {
  pool: Pick<InformerPool, "onChange" | "informers" | "cache">;
  runner: PluginRunner;
  view: PluginView;
  problems: Pick<ChildProblems, "onChange">;
  blocked: BlockedNames;
  news: VisitNews;
  /** What bulk visits of this process wrote: a change they made is bulk work here too. */
  bulkWrites?: Pick<BulkWrites, "made">;
  log: Logger;
}

/** Subscribes `plugin`'s routes on the pool: its own kind, its children, its watches. */
export function routeChanges(plugin: Plugin, deps: RouteDeps, sink: RouteSink): void {
  const { pool, runner, view, log } = deps;
  const owned = ownedKinds(plugin);
  // Before anything else asks for them: the first use decides whether they are skipped.
  for (const watch of plugin.watches ?? []) {
    if (watch.optional) pool.informers(watch.resource, { optional: true });
  }
  const seen = (resource: Resource) => {
    const relevant = relevantChange(declaredReads(plugin, resource));
    return (change: StoreChange<KubeObject>) =>
      change.type !== "updated" || relevant(change.old, change.object);
  };
  const keyOf = (object: KubeObject) => refKey(objectRef(plugin.for, object));

  const ownSeen = seen(plugin.for);
  pool.onChange<Stored<KubeObject>>(plugin.for, (change) => {
    const key = keyOf(change.object);
    if (change.type === "deleted") sink.gone(key);
    if (!ownSeen(change)) return;
    // The echo of a status this plugin wrote: the visit that wrote it decided (see VisitNews).
    // Only a change of the status alone: a relist may bring someone's edit with the echo.
    const version = versionOf(change.object);
    const statusAlone = change.type === "updated" && whatChanged(change) === "status";
    if (statusAlone && deps.news.echo(version)) return;
    const made = changeCause(change.type === "added" ? "created" : change.type, plugin.for, change);
    // Bulk work writes a parent's status, never its spec: a new generation is someone's edit.
    const sameSpec = change.type === "updated" &&
      change.old.metadata?.generation === change.object.metadata?.generation;
    const because = sameSpec ? inLaneOf(made, change, deps.bulkWrites, key) : made;
    // Deletion starting always reaches a plugin with a finalizer, whatever its filter says.
    const deleting = change.type === "updated" && plugin.finalize &&
      !change.old.metadata?.deletionTimestamp && !!change.object.metadata?.deletionTimestamp;
    if (deleting) return sink.enqueue(key, because);
    whenReady(
      () => runner.filter(change),
      (pass) => {
        if (pass && !(statusAlone && deps.news.held(key, version, because))) {
          sink.enqueue(key, because);
        }
      },
      (error) => log.error("filter of {object} failed: {error}", { object: key, error }),
    );
  });

  for (const { resource } of owned) {
    const childSeen = seen(resource);
    pool.onChange(resource, (change) => {
      if (childSeen(change)) routeToOwner(plugin, deps, sink, resource, change);
      const id = refKey(objectRef(resource, change.object));
      for (const parent of deps.blocked.release(id)) {
        sink.enqueue(parent, cause("unblocked", { object: describe(resource, change.object) }));
      }
    });
  }

  const related = [
    ...owned.map((o) => o.resource),
    ...(plugin.watches ?? []).map((w) => w.resource),
  ];
  for (const resource of related) {
    for (const informer of pool.informers(resource)) {
      // When a kind (CRD) appears or goes, every object must be looked at again.
      informer.onServedChange(() => sink.enqueueAll(cause("kind", { object: resource.kind })));
    }
  }

  for (const [index, watch] of (plugin.watches ?? []).entries()) {
    const context = {
      cache: <R extends KubeObject, N extends boolean>(resource: Resource<R, N>) =>
        view.reader(resource, pool.cache(resource)),
    };
    const failed = (error: unknown) =>
      log.error("watch mapping of {kind} failed: {error}", { kind: watch.resource.kind, error });
    const map = (object: Stored<KubeObject>, because: Cause) =>
      whenReady(() => runner.map(index, object, context), (refs) => {
        for (const at of refs) sink.enqueue(refKey(refTo(plugin.for, at)), because);
      }, failed);
    const watchSeen = seen(watch.resource);
    pool.onChange<Stored<KubeObject>>(watch.resource, (raw) => {
      if (!watchSeen(raw)) return;
      const change = view.change(watch.resource, raw);
      whenReady(() => runner.watchFilter(index, change), (pass) => {
        if (!pass) return;
        const because = inLaneOf(
          changeCause("watched", watch.resource, change),
          raw,
          deps.bulkWrites,
        );
        if (change.type === "updated") map(change.old, because);
        map(change.object, because);
      }, failed);
    });
  }

  // Another plugin could not write one of our objects' children: its status may say so.
  deps.problems.onChange((parent, by) => {
    const ours = parent.kind === plugin.for.kind && parent.group === plugin.for.group;
    if (ours && by !== plugin.name) {
      sink.enqueue(refKey(parent), cause("problem", { object: `plugin ${by}` }));
    }
  });
}

/** A child changed: its controller's key, unless a visit under way made it and will decide. */
function routeToOwner(
  plugin: Plugin,
  deps: RouteDeps,
  sink: RouteSink,
  resource: Resource,
  change: StoreChange<KubeObject>,
): void {
  // The echo of a write of this plugin's own, as it wanted it: the visit that wrote it decided.
  if (change.type !== "deleted" && deps.news.echo(versionOf(change.object))) return;
  const because = inLaneOf(changeCause("child", resource, change), change, deps.bulkWrites);
  for (const key of ownerKeysToVisit(change, plugin.for, deps.news)) sink.enqueue(key, because);
}

/**
 * The parents a child's change must visit: its controller before and after the change, except one
 * whose visit is under way, which holds what the child became and decides when it ends (the watch
 * often brings a write's echo before the write's answer). A parent that controls the child both
 * before and after is held once, not visited again for the old copy.
 */
export function ownerKeysToVisit(
  change: StoreChange<KubeObject>,
  kind: Resource,
  news: Pick<VisitNews, "appeared">,
): string[] {
  const now = controllerKeys(change.object, kind);
  const before = change.type === "updated" ? controllerKeys(change.old, kind) : [];
  const keys = [];
  for (const key of new Set([...now, ...before])) {
    const held = change.type !== "deleted" && now.includes(key) &&
      news.appeared(key, versionOf(change.object));
    if (!held) keys.push(key);
  }
  return keys;
}

/** `because`, in the bulk lane when bulk work of ours made the change (see BulkWrites). */
export function inLaneOf(
  because: Cause,
  change: StoreChange<KubeObject>,
  bulkWrites: Pick<BulkWrites, "made"> | undefined,
  key?: string,
): Cause {
  const ours = change.type !== "deleted" && bulkWrites?.made(change.object, key);
  return ours ? { ...because, priority: "bulk" } : because;
}

/**
 * The queue keys of the objects of `kind` that control `object` (by its controller owner
 * reference, of that kind and API version): a change of a child reconciles its parent.
 */
export function controllerKeys(object: KubeObject, kind: Resource): string[] {
  const namespace = kind.namespaced ? object.metadata?.namespace : undefined;
  return (object.metadata?.ownerReferences ?? [])
    .filter((ref) =>
      ref.controller && ref.kind === kind.kind && ref.apiVersion === apiVersionOf(kind)
    )
    .map((ref) => refKey(ownerRefOf(ref, namespace)));
}

/** The cause a change of an object of `resource` gives, saying what of it changed. */
export function changeCause(
  kind: CauseKind,
  resource: Resource,
  change: StoreChange<KubeObject>,
): Cause {
  return cause(kind, { object: describe(resource, change.object), change: whatChanged(change) });
}

/** What of an object a change touched, in a word. */
export function whatChanged(change: StoreChange<KubeObject>): string {
  if (change.type === "added") return "created";
  if (change.type === "deleted") return "deleted";
  const [old, now] = [change.old.metadata ?? {}, change.object.metadata ?? {}];
  if (!old.deletionTimestamp && now.deletionTimestamp) return "deletion";
  if (old.generation !== now.generation) return "spec";
  const meta = (m: typeof old) =>
    JSON.stringify([m.labels, m.annotations, m.finalizers, m.ownerReferences]);
  return meta(old) !== meta(now) ? "metadata" : "status";
}

/** `Kind namespace/name` (or `Kind name`). */
function describe(resource: Resource, object: KubeObject): string {
  const { namespace, name } = object.metadata ?? {};
  return `${resource.kind} ${namespace ? `${namespace}/` : ""}${name}`;
}
