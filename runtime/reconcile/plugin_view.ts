/**
 * What a plugin sees of the caches: readers, objects and changes as its declared `reads` allow.
 * With `strict` (tests), a read of a field it did not declare throws an UndeclaredReadError
 * instead of reading what the cache kept; otherwise the caches are handed over as they are.
 */
import type { KubeObject } from "../../kube/object.ts";
import type { Resource } from "../../kube/resource.ts";
import { type CacheReader, type StoreChange, strictObject, strictReader } from "../cache/mod.ts";
import { declaredReads, type Plugin } from "../plugin/mod.ts";

export class PluginView {
  readonly #plugin: Plugin;
  readonly #strict: boolean;

  constructor(plugin: Plugin, strict = false) {
    this.#plugin = plugin;
    this.#strict = strict;
  }

  /** The cache of `resource` as the plugin may read it. */
  reader<R extends KubeObject, N extends boolean>(
    resource: Resource<R, N>,
    reader: CacheReader<R, N>,
  ): CacheReader<R, N> {
    const fields = this.#fields(resource);
    if (!fields) return reader;
    return strictReader(reader, {
      plugin: this.#plugin.name,
      kind: resource.kind,
      projection: { fields },
    });
  }

  /** An object of `resource` as the plugin may read it. */
  object<O extends KubeObject>(resource: Resource, object: O): O {
    const fields = this.#fields(resource);
    if (!fields) return object;
    return strictObject(object, {
      plugin: this.#plugin.name,
      kind: resource.kind,
      projection: { fields },
    });
  }

  /** A change of `resource` as the plugin may read it. */
  change<O extends KubeObject>(resource: Resource, change: StoreChange<O>): StoreChange<O> {
    if (!this.#fields(resource)) return change;
    const view = (object: O) => this.object(resource, object);
    return change.type === "updated"
      ? { type: "updated", object: view(change.object), old: view(change.old) }
      : { type: change.type, object: view(change.object) };
  }

  #fields(resource: Resource): string[] | undefined | false {
    return this.#strict && declaredReads(this.#plugin, resource);
  }
}
