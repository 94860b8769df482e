/**
 * What a cache keeps of an object that arrived (just parsed, or just answered to our write): its
 * projection, slimmed, with what it has in common with other objects shared and what it has equal
 * with the version it replaces kept as it was.
 */
import type { KubeObject } from "../../kube/object.ts";
import type { InformerOptions } from "./informer_options.ts";
import { slim } from "./slim.ts";

/**
 * The version of `object` to store, beside `previous` (the one the cache holds, if any). `object`
 * must be the caller's alone: it may be changed in place.
 */
export function keptVersion<T extends KubeObject>(
  object: T,
  previous: T | undefined,
  options: Pick<InformerOptions, "projector" | "interner" | "slim">,
): T {
  const { projector, interner } = options;
  // A projection is built a field at a time, and V8 keeps such objects a little roomier than
  // JSON.parse makes them; it is kept as built all the same, because once the caches share what
  // objects have in common, parsing it again saves less heap than it costs in CPU and garbage per
  // object (bench/README.md, "The cache: what it keeps").
  const kept = slim(projector ? projector(object) as T : object, options.slim);
  return interner ? interner.intern(kept, previous) : kept;
}
