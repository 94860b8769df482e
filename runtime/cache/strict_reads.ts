/**
 * Reads checked against what a plugin declared (`reads`): in tests, a cache reader whose objects
 * throw when the plugin reads a field it did not declare, instead of the `undefined` a projected
 * cache (projection.ts) would give in production. So a plugin that starts reading a new field
 * fails its tests until it declares it, rather than silently seeing nothing in a cluster.
 */
import type { KubeObject } from "../../kube/object.ts";
import { declares, type Projection } from "./projection.ts";
import type { CacheReader } from "./store.ts";

/** A plugin read a field of a kind that it did not declare in `reads`. */
export class UndeclaredReadError extends Error {
  /** Always `UndeclaredReadError`. */
  override readonly name = "UndeclaredReadError";
}

/** Who reads what, for the error's words. */
export interface Reader {
  /** The plugin. */
  plugin: string;
  /** The kind read. */
  kind: string;
  /** What the plugin declared of that kind. */
  projection: Projection;
}

/** `reader`, whose objects throw on a read of an undeclared field (see the module doc). */
export function strictReader<T extends KubeObject, N extends boolean>(
  reader: CacheReader<T, N>,
  who: Reader,
): CacheReader<T, N> {
  const wrap = <O>(object: O): O => object && strictObject(object as KubeObject, who) as O;
  return {
    get: (namespace, name) => wrap(reader.get(namespace, name)),
    list: (options) => reader.list(options).map(wrap),
    ownedBy: (uid) => reader.ownedBy(uid).map(wrap),
  };
}

const ALWAYS = new Set(["apiVersion", "kind", "metadata"]);

/** What callers look for on any object (a promise's `then`, JSON's `toJSON`, test matchers'). */
const PROTOCOL = new Set(["then", "toJSON", "asymmetricMatch", "nodeType", "$$typeof"]);

/** `object` as a plugin that declared `who.projection` may read it. */
export function strictObject<T extends KubeObject>(object: T, who: Reader): T {
  return view(object, [], who) as T;
}

function view(value: unknown, path: string[], who: Reader): unknown {
  if (typeof value !== "object" || value === null) return value;
  // A proxy must answer for a frozen object's fields exactly as it does (interner.ts shares
  // frozen subtrees), which a view that hides or wraps them does not: view a copy instead.
  if (Object.isFrozen(value)) value = Array.isArray(value) ? [...value] : { ...value };
  const allowed = (key: string) => {
    if (!path.length && ALWAYS.has(key)) return "kept" as const;
    return declares(who.projection, [...path, key]);
  };
  return new Proxy(value as object, {
    get(target, key, receiver) {
      const found = Reflect.get(target, key, receiver);
      // Methods and the like (`map`, `length`, `then`, `toJSON`): not fields.
      if (typeof key === "symbol" || (!Object.hasOwn(target, key) && key in target)) return found;
      if (PROTOCOL.has(key) || key.startsWith("@@")) return found;
      const how = allowed(key);
      if (how === "kept") return found;
      if (how === "leads") return view(found, [...path, key], who);
      if (Array.isArray(target) && /^\d+$/.test(key)) return found;
      const field = [...path, key].join(".").replace(/\.(\d+)(?=\.|$)/g, "[*]");
      throw new UndeclaredReadError(
        `plugin ${who.plugin} read ${who.kind} ${field}, which it does not declare: add ` +
          `"${field}" (or a path above it) to its reads of ${who.kind}, or the cache will not ` +
          `keep it`,
      );
    },
    has: (target, key) =>
      typeof key === "symbol" || Array.isArray(target)
        ? Reflect.has(target, key)
        : Reflect.has(target, key) && allowed(key) !== false,
    ownKeys: (target) =>
      Reflect.ownKeys(target).filter((key) =>
        typeof key === "symbol" || Array.isArray(target) || allowed(key) !== false
      ),
    getOwnPropertyDescriptor(target, key) {
      if (typeof key === "symbol" || Array.isArray(target) || allowed(key) !== false) {
        return Reflect.getOwnPropertyDescriptor(target, key);
      }
      return undefined;
    },
  });
}
