/**
 * What the manager plans for each kind from the plugins' declarations: what its cache keeps of the
 * objects (projections), and how its caches follow a ring's shards (kind sharding).
 */
import type { KubeObject } from "../../kube/object.ts";
import type { Resource } from "../../kube/resource.ts";
import { type KindSharding, type Projection, resourceId } from "../cache/mod.ts";
import { declaredReads, ownedKinds, type Plugin } from "../plugin/mod.ts";
import { controllerOf } from "../reconcile/mod.ts";

/**
 * How each kind's caches follow the shards: a plugin's own kind by its objects' uids, children by
 * their parent's (through the bucket label they carry), kinds every watching plugin maps to a
 * parent by that (`Watch.shardKey`); the rest (Nodes) whole. A kind that is one plugin's own and
 * another's child is kept whole: its two keys could disagree.
 */
export function kindSharding(
  plugins: readonly Plugin[],
  bucketLabel: string,
): (resource: Resource) => KindSharding | undefined {
  const parents = new Set(plugins.map((p) => resourceId(p.for)));
  const children = new Set(
    plugins.flatMap((p) => ownedKinds(p).map((o) => resourceId(o.resource))),
  );
  const keys = new Map<string, (object: KubeObject) => string | undefined>();
  const unkeyed = new Set<string>();
  for (const watch of plugins.flatMap((p) => p.watches ?? [])) {
    const id = resourceId(watch.resource);
    if (!watch.shardKey) unkeyed.add(id);
    else if (!keys.has(id)) keys.set(id, watch.shardKey.bind(watch) as (o: KubeObject) => string);
  }
  return (resource) => {
    const id = resourceId(resource);
    if (parents.has(id)) return children.has(id) ? undefined : { by: "uid" };
    if (children.has(id)) {
      return { by: "controller", label: bucketLabel, key: (o) => controllerOf(o)?.uid };
    }
    const key = keys.get(id);
    return key && !unkeyed.has(id) ? { by: "key", key } : undefined;
  };
}

/**
 * What each kind's cache keeps of its objects: what the plugins using it declare they read (the
 * union), and for children what the runtime compares; whole when some plugin using it declares
 * nothing of it (or none uses it: a kind read on demand).
 */
export function projections(
  plugins: readonly Plugin[],
): (resource: Resource) => Projection | undefined {
  return (resource) => {
    const id = resourceId(resource);
    const users = plugins.filter((p) =>
      [p.for, ...ownedKinds(p).map((o) => o.resource), ...(p.watches ?? []).map((w) => w.resource)]
        .some((r) => resourceId(r) === id)
    );
    const fields = new Set<string>();
    for (const plugin of users) {
      const declared = declaredReads(plugin, resource);
      if (!declared) return undefined;
      declared.forEach((field) => fields.add(field));
    }
    if (!users.length) return undefined;
    const managed = plugins.some((p) => ownedKinds(p).some((o) => resourceId(o.resource) === id));
    return { fields: [...fields], managed };
  };
}
