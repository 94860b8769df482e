/**
 * What a cache keeps of each object of a kind: its metadata (slimmed, see slim.ts), and of its
 * body only the fields the plugins declare they read, and for a kind the runtime writes as
 * children, the fields some field manager set. The rest (a Pod's containers, a Node's addresses,
 * the defaults the API server filled into a DaemonSet) is dropped as the object arrives.
 *
 * Why the fields some manager set are enough for children: the runtime decides whether a child is
 * up to date by comparing what the plugin wants with the child at the same paths, and everything
 * it applied is in its own field set (`metadata.managedFields`); a hand edit of one of those
 * fields moves it to the editor's set (or, removed, to nobody's: then the path is missing, which
 * is drift too); what others added is in their sets (foreign_fields.ts). Server defaults belong
 * to nobody and are never compared. Status comes through its subresource and is kept only when
 * declared.
 *
 * A path is dotted field names (`status.conditions`), each optionally `[*]` to go into every item
 * of a list (`spec.containers[*].image`): the value at the end is kept whole. On a kind kept for
 * its managed fields, a list is kept whole where a path goes into its items.
 */
import type { KubeObject } from "../../kube/object.ts";

/** What a cache keeps of a kind's bodies (metadata is always kept). */
export interface Projection {
  /** Paths kept whole: `spec`, `status.conditions`, `spec.containers[*].image`. */
  fields: readonly string[];
  /** Keep, besides, the body at every path a field manager set (not through a subresource). */
  managed?: boolean;
}

/** The paths as a tree: a node keeps its value whole, or some of its fields, or each item's. */
interface Node {
  whole?: true;
  fields?: Map<string, Node>;
  items?: Node;
}

/** A managed field set (`fieldsV1`): `f:name`, `k:{keys}`, `v:value`, `i:index`, `.`. */
type FieldSet = { [key: string]: FieldSet };

/** A projection, ready to apply (its paths parsed once). */
export interface Projector {
  /** What it keeps, as given. */
  readonly projection: Projection;
  /** A new object with what the projection keeps of `object` (its metadata object shared). */
  (object: KubeObject): KubeObject;
}

/** Parses `projection` (throwing a TypeError that names a bad path) into a function applying it. */
export function projector(projection: Projection): Projector {
  const root: Node = {};
  for (const path of projection.fields) add(root, parsePath(path), Boolean(projection.managed));
  const apply = (object: KubeObject): KubeObject => {
    const source = object as Record<string, unknown>;
    const out: Record<string, unknown> = projection.managed ? managedBody(object) : {};
    merge(out, pick(source, root) as Record<string, unknown> | undefined);
    out.apiVersion = object.apiVersion;
    out.kind = object.kind;
    out.metadata = object.metadata;
    return out as KubeObject;
  };
  return Object.assign(apply, { projection });
}

/** True when nothing of the body is kept: the server can send metadata alone. */
export function metadataOnly(projection: Projection): boolean {
  return !projection.managed && projection.fields.length === 0;
}

/** Whether `path` (dotted, with `[*]`) lies within what `projection`'s fields keep, or leads there. */
export function declares(
  projection: Projection,
  path: readonly string[],
): "kept" | "leads" | false {
  let best: "kept" | "leads" | false = false;
  for (const field of projection.fields) {
    const want = parsePath(field).flatMap((s) => s.each ? [s.name, "*"] : [s.name]);
    const n = Math.min(want.length, path.length);
    let same = true;
    for (let i = 0; i < n && same; i++) same = want[i] === "*" || want[i] === path[i];
    if (!same) continue;
    if (path.length >= want.length) return "kept";
    best = "leads";
  }
  return best;
}

interface Segment {
  name: string;
  each: boolean;
}

function parsePath(path: string): Segment[] {
  const segments = path.split(".").map((part) => {
    const match = /^([^.[\]]+)(\[\*\])?$/.exec(part);
    if (!match) {
      throw new TypeError(
        `read path "${path}": write dotted field names, each optionally followed by [*] ` +
          `(spec.containers[*].image)`,
      );
    }
    return { name: match[1], each: Boolean(match[2]) };
  });
  if (segments[0]?.name === "metadata" || segments[0]?.name === "apiVersion") {
    throw new TypeError(`read path "${path}": metadata, apiVersion and kind are always kept`);
  }
  return segments;
}

function add(node: Node, path: Segment[], managed: boolean): void {
  if (node.whole) return;
  if (!path.length) {
    node.whole = true;
    delete node.fields;
    delete node.items;
    return;
  }
  const [first, ...rest] = path;
  node.fields ??= new Map();
  let child = node.fields.get(first.name);
  if (!child) node.fields.set(first.name, child = {});
  // Items of a list kept for its managed fields are matched by key, not by place: keep it whole.
  if (first.each && managed) return add(child, [], managed);
  if (first.each) {
    if (child.whole) return;
    child.items ??= {};
    return add(child.items, rest, managed);
  }
  add(child, rest, managed);
}

/** What `node` keeps of `value`; undefined when nothing. */
function pick(value: unknown, node: Node): unknown {
  if (value === undefined) return undefined;
  if (node.whole) return value;
  if (node.items && Array.isArray(value)) return value.map((item) => pick(item, node.items!));
  if (!node.fields || !isObject(value)) return undefined;
  const out: Record<string, unknown> = {};
  let any = false;
  for (const [name, child] of node.fields) {
    const kept = pick(value[name], child);
    if (kept !== undefined) {
      out[name] = kept;
      any = true;
    }
  }
  return any ? out : undefined;
}

/** Copies `from` into `into`: objects field by field, anything else replacing what was there. */
function merge(into: Record<string, unknown>, from: Record<string, unknown> | undefined): void {
  for (const [name, value] of Object.entries(from ?? {})) {
    const there = into[name];
    if (isObject(value) && isObject(there)) merge(there, value);
    else into[name] = value;
  }
}

/** The body at the paths of every field set not written through a subresource, metadata aside. */
function managedBody(object: KubeObject): Record<string, unknown> {
  const sets: FieldSet[] = [];
  for (const entry of object.metadata?.managedFields ?? []) {
    if (!entry.subresource && entry.fieldsV1) sets.push(entry.fieldsV1 as FieldSet);
  }
  // One manager (the usual child: ours alone) needs no union of sets.
  let union: FieldSet = sets[0] ?? {};
  if (sets.length > 1) {
    union = {};
    for (const set of sets) unite(union, set);
  }
  return copyFields(object as Record<string, unknown>, union, TOP_LEVEL_SKIPPED);
}

/** What the body projection leaves to the metadata, which is kept apart. */
const TOP_LEVEL_SKIPPED = new Set(["f:metadata", "f:apiVersion", "f:kind"]);

function unite(into: FieldSet, set: FieldSet): void {
  for (const key in set) unite(into[key] ??= {}, set[key] ?? {});
}

/** A set that names only the node itself: its value is kept whole. */
function isLeaf(set: FieldSet): boolean {
  for (const key in set) if (key !== ".") return false;
  return true;
}

function copyFields(
  source: Record<string, unknown>,
  set: FieldSet,
  skipped?: ReadonlySet<string>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key in set) {
    if (!key.startsWith("f:") || skipped?.has(key)) continue;
    const sub = set[key];
    const name = key.slice(2);
    const value = source[name];
    if (value === undefined) continue;
    if (isLeaf(sub) || value === null || typeof value !== "object") out[name] = value;
    else if (Array.isArray(value)) out[name] = copyItems(value, sub);
    else out[name] = copyFields(value as Record<string, unknown>, sub);
  }
  return out;
}

/**
 * The keys that name a list's item, by the text of its field set entry (`k:{"name":"c"}`): the same
 * few come in every object of a kind, so each is parsed once. Read only.
 */
const itemKeys = new Map<string, Record<string, unknown>>();

function itemKeysOf(key: string): Record<string, unknown> {
  let keys = itemKeys.get(key);
  if (keys === undefined) {
    // Bounded: one per distinct key text (a uid-keyed list would have one per object).
    if (itemKeys.size >= 10_000) itemKeys.clear();
    itemKeys.set(key, keys = JSON.parse(key.slice(2)) as Record<string, unknown>);
  }
  return keys;
}

/** Whether `item` has the values `keys` name it by. */
function named(item: Record<string, unknown>, keys: Record<string, unknown>): boolean {
  for (const k in keys) {
    const want = keys[k];
    const value = item[k];
    if (value === want) continue;
    if (typeof want !== "object" || JSON.stringify(value) !== JSON.stringify(want)) return false;
  }
  return true;
}

/** The items of a list a set names (by keys, value or index), in the list's order. */
function copyItems(items: unknown[], set: FieldSet): unknown[] {
  const byKeys: [Record<string, unknown>, FieldSet][] = [];
  const byValue = new Map<string, FieldSet>();
  for (const key in set) {
    const sub = set[key];
    if (key.startsWith("k:")) byKeys.push([itemKeysOf(key), sub]);
    else if (key.startsWith("v:")) byValue.set(JSON.stringify(JSON.parse(key.slice(2))), sub);
    else if (key.startsWith("i:")) byValue.set(`#${key.slice(2)}`, sub);
  }
  const out: unknown[] = [];
  items.forEach((item, index) => {
    const keyed = isObject(item) ? byKeys.find(([keys]) => named(item, keys)) : undefined;
    const sub = keyed?.[1] ??
      (byValue.size ? byValue.get(JSON.stringify(item)) ?? byValue.get(`#${index}`) : undefined);
    if (!sub) return;
    if (isLeaf(sub) || !isObject(item)) return void out.push(item);
    // The keys that name the item stay, whatever the set says of them.
    out.push({ ...copyFields(item, sub), ...keyed?.[0] });
  });
  return out;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
