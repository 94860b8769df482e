/**
 * A pool of caches held in memory, for unit tests of what reads the caches (the controller, its
 * routes): `put` and `remove` change a cache and tell its handlers, as an informer would after a
 * watch event. Its caches are always fresh and every kind is served.
 */
import type { KubeObject, Stored } from "../../../kube/object.ts";
import type { Resource } from "../../../kube/resource.ts";
import {
  type CacheReader,
  type ChangeHandler,
  type Informer,
  type InformerPool,
  resourceId,
  Store,
  type StoreChange,
} from "../../cache/mod.ts";

export class FakePool implements Pick<InformerPool, "cache" | "informers" | "onChange"> {
  readonly #stores = new Map<string, Store<KubeObject>>();
  readonly #handlers = new Map<string, ChangeHandler<KubeObject>[]>();
  readonly #informers = new Map<string, Informer[]>();
  /** The API server's counter, which every write moves on. */
  #version = 0;

  cache<T extends KubeObject, N extends boolean>(resource: Resource<T, N>): CacheReader<T, N> {
    return this.#store(resource) as unknown as CacheReader<T, N>;
  }

  #store(resource: Resource): Store<KubeObject> {
    const id = resourceId(resource);
    let store = this.#stores.get(id);
    if (!store) this.#stores.set(id, store = new Store(resource));
    return store;
  }

  informers<T extends KubeObject>(resource: Resource): Informer<T>[] {
    const id = resourceId(resource);
    let informers = this.#informers.get(id);
    if (!informers) {
      const informer = {
        resource,
        fresh: true,
        epoch: 0,
        installed: true,
        shard: undefined,
        whenFresh: () => Promise.resolve(),
        onServedChange: () => () => {},
        observe: () => {},
      };
      this.#informers.set(id, informers = [informer as unknown as Informer]);
    }
    return informers as unknown as Informer<T>[];
  }

  onChange<T extends KubeObject>(resource: Resource, handler: ChangeHandler<T>): () => void {
    const id = resourceId(resource);
    const handlers = this.#handlers.get(id) ?? [];
    handlers.push(handler as ChangeHandler<KubeObject>);
    this.#handlers.set(id, handlers);
    return () => handlers.splice(handlers.indexOf(handler as ChangeHandler<KubeObject>), 1);
  }

  /** Stores `object` (added, or updated when its key was there) and tells the handlers. */
  put(resource: Resource, object: KubeObject): Stored<KubeObject> {
    const store = this.#store(resource);
    const before = store.get(object.metadata?.namespace, object.metadata!.name!);
    const stored = {
      ...object,
      metadata: {
        uid: before?.metadata.uid ?? crypto.randomUUID(),
        ...object.metadata,
        resourceVersion: String(++this.#version),
      },
    } as Stored<KubeObject>;
    const change = store.upsert(stored);
    if (change) this.#tell(resource, change);
    return stored;
  }

  /** Removes the object of `object`'s name and tells the handlers. */
  remove(resource: Resource, object: KubeObject): void {
    const store = this.#store(resource);
    const old = store.get(object.metadata?.namespace, object.metadata!.name!);
    const change = old && store.remove(old);
    if (change) this.#tell(resource, change);
  }

  #tell(resource: Resource, change: StoreChange<KubeObject>): void {
    for (const handler of this.#handlers.get(resourceId(resource)) ?? []) handler(change);
  }
}
