/** The informer cache of one kind: objects by their key (`refKey`), indexed by owner UID, queried by label. */
import type { KubeObject, Stored } from "../../kube/object.ts";
import { objectRef, refKey, refTo } from "../../kube/object_ref.ts";
import type { Resource } from "../../kube/resource.ts";
import { matchesSelector, parseSelector, type Selector } from "./label_selector.ts";

/** A change the store went through. */
export type StoreChange<T> =
  | { type: "added"; object: T }
  | { type: "updated"; object: T; old: T }
  | { type: "deleted"; object: T };

/** Which cached objects `list` returns. */
export interface CacheListOptions {
  /** Only this namespace; all when absent. */
  namespace?: string;
  /** Only objects whose labels match; all when absent. */
  labelSelector?: string | Selector;
  /**
   * At most this many (the first the cache holds, oldest first): a look for *any* match in a big
   * cache (`list({ limit: 100 }).some(…)`) then costs 100 objects, not every one.
   */
  limit?: number;
}

/**
 * Read access to cached objects of one kind (`N`: whether it is namespaced); what plugins get.
 * Every object came from the API server, so each has its name, uid (and namespace). Never mutate
 * what it returns.
 */
export interface CacheReader<T extends KubeObject, N extends boolean = boolean> {
  /** The object named `name` (in `namespace`, for a namespaced kind), if cached. */
  get(namespace: string | undefined, name: string): Stored<T, N> | undefined;
  /** The objects in `namespace` (or all) whose labels match `labelSelector` (or all), up to `limit`. */
  list(options?: CacheListOptions): Stored<T, N>[];
  /** Objects with an owner reference to `uid`. */
  ownedBy(uid: string): Stored<T, N>[];
}

/** True when both resourceVersions are numbers and `a`'s is the smaller; unknown order is false. */
function isOlder(a: KubeObject, b: KubeObject): boolean {
  const x = Number(a.metadata?.resourceVersion);
  const y = Number(b.metadata?.resourceVersion);
  return Number.isSafeInteger(x) && Number.isSafeInteger(y) && x < y;
}

/** The objects of one kind an informer holds, by namespace and name, indexed by owner uid. */
export class Store<T extends KubeObject> implements CacheReader<T> {
  readonly #objects = new Map<string, T>();
  /** By owner uid: the key of the one object it owns, or a Set when it owns several (rarer). */
  readonly #byOwner = new Map<string, string | Set<string>>();
  readonly #kind: Pick<Resource, "group" | "kind" | "namespaced">;

  /** A store of objects of `resource`'s kind (its group, kind and scope make their keys). */
  constructor(resource: Pick<Resource, "group" | "kind" | "namespaced">) {
    this.#kind = { group: resource.group, kind: resource.kind, namespaced: resource.namespaced };
  }

  #key(object: KubeObject): string {
    return refKey(objectRef(this.#kind, object));
  }

  /** How many objects it holds. */
  get size(): number {
    return this.#objects.size;
  }

  get(namespace: string | undefined, name: string): Stored<T> | undefined {
    return this.#objects.get(refKey(refTo(this.#kind, { namespace, name }))) as Stored<T>;
  }

  list(options: CacheListOptions = {}): Stored<T>[] {
    const { namespace, limit = Infinity } = options;
    const selector = typeof options.labelSelector === "string"
      ? parseSelector(options.labelSelector)
      : options.labelSelector;
    if (!namespace && !selector && limit >= this.#objects.size) {
      return [...this.#objects.values()] as Stored<T>[];
    }
    const out: Stored<T>[] = [];
    for (const object of this.#objects.values()) {
      if (out.length >= limit) break;
      if (namespace && object.metadata?.namespace !== namespace) continue;
      if (selector && !matchesSelector(selector, object.metadata?.labels ?? {})) continue;
      out.push(object as Stored<T>);
    }
    return out;
  }

  ownedBy(uid: string): Stored<T>[] {
    const owned = this.#byOwner.get(uid);
    if (owned === undefined) return [];
    const keys = typeof owned === "string" ? [owned] : [...owned];
    return keys.map((key) => this.#objects.get(key) as Stored<T>);
  }

  /** The version the cache holds of `object` (the same namespace and name), if any. */
  current(object: KubeObject): T | undefined {
    return this.#objects.get(this.#key(object));
  }

  /** Adds or replaces one object; returns the change, or undefined if nothing changed. */
  upsert(object: T): StoreChange<T> | undefined {
    const key = this.#key(object);
    const old = this.#objects.get(key);
    if (old && old.metadata?.resourceVersion === object.metadata?.resourceVersion) return undefined;
    // A watch event older than a version we already took from our own write's answer.
    if (old && isOlder(object, old)) return undefined;
    if (old) this.#unindex(key, old);
    this.#objects.set(key, object);
    this.#index(key, object);
    return old ? { type: "updated", object, old } : { type: "added", object };
  }

  /**
   * Adds a version we received as the answer to our own write, unless the cache already has the
   * same or a newer one. resourceVersions are opaque; when either is not a number we cannot
   * order them and leave the cache to the watch.
   */
  upsertIfNewer(object: T): StoreChange<T> | undefined {
    const old = this.get(object.metadata?.namespace, object.metadata?.name ?? "");
    if (
      old ? !isOlder(old, object) : !Number.isSafeInteger(Number(object.metadata?.resourceVersion))
    ) {
      return undefined;
    }
    return this.upsert(object);
  }

  /** Removes one object; returns the change, or undefined if it was not there. */
  remove(object: T): StoreChange<T> | undefined {
    const key = this.#key(object);
    const old = this.#objects.get(key);
    if (!old) return undefined;
    this.#unindex(key, old);
    this.#objects.delete(key);
    // Report the final state the watch sent, which is newer than the cached one.
    return { type: "deleted", object };
  }

  /**
   * Replaces everything with a fresh list (after a relist) and returns the differences, so that
   * nothing that changed or vanished while the watch was down goes unnoticed.
   */
  replace(objects: T[]): StoreChange<T>[] {
    const changes: StoreChange<T>[] = [];
    const seen = new Set<string>();
    for (const object of objects) {
      seen.add(this.#key(object));
      const change = this.upsert(object);
      if (change) changes.push(change);
    }
    for (const [key, object] of [...this.#objects]) {
      if (seen.has(key)) continue;
      this.#unindex(key, object);
      this.#objects.delete(key);
      changes.push({ type: "deleted", object });
    }
    return changes;
  }

  #index(key: string, object: T): void {
    for (const ref of object.metadata?.ownerReferences ?? []) {
      const keys = this.#byOwner.get(ref.uid);
      if (keys === undefined || keys === key) this.#byOwner.set(ref.uid, key);
      else if (typeof keys === "string") this.#byOwner.set(ref.uid, new Set([keys, key]));
      else keys.add(key);
    }
  }

  #unindex(key: string, object: T): void {
    for (const ref of object.metadata?.ownerReferences ?? []) {
      const keys = this.#byOwner.get(ref.uid);
      if (keys === key) this.#byOwner.delete(ref.uid);
      else if (typeof keys === "object") {
        keys.delete(key);
        if (keys.size === 1) this.#byOwner.set(ref.uid, keys.values().next().value!);
      }
    }
  }
}
