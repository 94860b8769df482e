/**
 * Makes a child wholly its plugin's when it was made under another identity the operator takes
 * over from (`takesOverFrom`: a prototype run as ptemplate-operator with `--plugin`, the same
 * operator under an earlier name): the field sets of the former identity's writes and the
 * plugin's own become the plugin's one "Apply" entry, in one JSON patch guarded by the uid and
 * every entry it rewrites, with a Normal `TakenOver` Event on the parent.
 *
 * Why field sets, and not only the labels: the fields the former identity applied are another
 * manager's, and a create by POST (as builds before the create-only apply made children) gives its
 * field manager every field of the object as stored, the API server's defaults included
 * (`dnsPolicy`, a Service's `sessionAffinity`, …). Left to the former manager, those fields are
 * another manager's that the plugin does not send: foreign additions, removed with a
 * `ForeignFieldsRemoved` Warning at every takeover. Made the plugin's, they are its own; what the former identity set
 * that the plugin no longer returns is then dropped by the plugin's next apply, as server-side
 * apply drops any field its manager stops sending.
 *
 * What is taken over: a child that the parent this plugin reconciles controls (its controller
 * owner reference names the parent's uid) and that carries a former identity's plugin label
 * valued with this plugin's name. Its former label and hash annotation are removed; the next
 * apply puts the operator's own. A former child the plugin no longer returns is pruned like its
 * own.
 *
 * What is not: an object controlled by another object or by nobody (the ownership rule holds: it
 * is reported, unless the plugin opted in to adopting its kind); a child labelled for another
 * plugin; anything an identity not listed in `takesOverFrom` wrote, whose additions stay foreign
 * (removed with a Warning, as a `kubectl edit` is); and status, written through its subresource by
 * the child's own controller.
 */
import type { KubeClient } from "../../kube/client.ts";
import type { KubeObject } from "../../kube/object.ts";
import { type Resource, resourcePath } from "../../kube/resource.ts";
import type { EventRecorder } from "../observe/mod.ts";
import type { PatchOperation } from "./foreign_fields.ts";

/** What a plugin's children carry when made under a former identity (formerTracesOf). */
export interface FormerTraces {
  managers: ReadonlySet<string>;
  labels: readonly string[];
  annotations: readonly string[];
}

type FieldSet = Record<string, unknown>;
type Entry = NonNullable<NonNullable<KubeObject["metadata"]>["managedFields"]>[number];

const escapePointer = (key: string) => key.replaceAll("~", "~0").replaceAll("/", "~1");
const isObject = (v: unknown): v is FieldSet =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** True when `child` is `plugin`'s child made under a former identity (one of its labels). */
export function madeUnderFormer(child: KubeObject, plugin: string, traces: FormerTraces): boolean {
  const labels = child.metadata?.labels ?? {};
  return traces.labels.some((label) => labels[label] === plugin);
}

/** Two field sets as one: every field either holds. */
function union(a: FieldSet, b: FieldSet): FieldSet {
  const out: FieldSet = { ...a };
  for (const [key, value] of Object.entries(b)) {
    out[key] = isObject(out[key]) && isObject(value) ? union(out[key] as FieldSet, value) : value;
  }
  return out;
}

/** `set` without the field at `path` (and parents it leaves empty). */
function without(set: FieldSet, path: string[]): FieldSet {
  const [first, ...rest] = path;
  if (!(first in set)) return set;
  const out = { ...set };
  if (!rest.length || !isObject(out[first])) delete out[first];
  else {
    const inner = without(out[first] as FieldSet, rest);
    if (Object.keys(inner).length) out[first] = inner;
    else delete out[first];
  }
  return out;
}

/**
 * The JSON patch that hands `live` (as the API server has it, field sets and all) to `manager`:
 * its own entries of the body and those of `traces.managers` become one "Apply" entry of
 * `manager`, and the former labels and annotations go. Undefined when there is nothing to hand
 * over. Guarded: if anything it rewrites moved, the API server refuses it whole (422).
 */
export function handOverPatch(
  live: KubeObject,
  manager: string,
  traces: FormerTraces,
): PatchOperation[] | undefined {
  const meta = live.metadata ?? {};
  const entries = meta.managedFields ?? [];
  const merged = entries.flatMap((entry, index) =>
    !entry.subresource && (entry.manager === manager || traces.managers.has(entry.manager ?? ""))
      ? [{ entry, index }]
      : []
  );
  const labels = traces.labels.filter((l) => meta.labels?.[l] !== undefined);
  const annotations = traces.annotations.filter((a) => meta.annotations?.[a] !== undefined);
  const formerEntries = merged.filter(({ entry }) => entry.manager !== manager);
  if (!formerEntries.length && !labels.length && !annotations.length) return undefined;
  const ops: PatchOperation[] = [{ op: "test", path: "/metadata/uid", value: meta.uid }];
  let fields: FieldSet = {};
  for (const { entry, index } of merged) {
    ops.push(
      { op: "test", path: `/metadata/managedFields/${index}/manager`, value: entry.manager },
      { op: "test", path: `/metadata/managedFields/${index}/fieldsV1`, value: entry.fieldsV1 },
    );
    fields = union(fields, isObject(entry.fieldsV1) ? entry.fieldsV1 : {});
  }
  for (const label of labels) fields = without(fields, ["f:metadata", "f:labels", `f:${label}`]);
  for (const a of annotations) fields = without(fields, ["f:metadata", "f:annotations", `f:${a}`]);
  if (merged.length) {
    // Into our Apply entry if there is one, else the first: one entry, as after an apply.
    const target = merged.find(({ entry }) =>
      entry.manager === manager && entry.operation === "Apply"
    ) ??
      merged[0];
    const entry: Entry = {
      ...target.entry,
      manager,
      operation: "Apply",
      apiVersion: live.apiVersion,
      fieldsType: "FieldsV1",
      fieldsV1: fields,
    };
    ops.push({ op: "replace", path: `/metadata/managedFields/${target.index}`, value: entry });
    for (const { index } of merged.filter((m) => m !== target).sort((a, b) => b.index - a.index)) {
      ops.push({ op: "remove", path: `/metadata/managedFields/${index}` });
    }
  }
  for (
    const [field, keys, values] of [
      ["labels", labels, meta.labels ?? {}],
      ["annotations", annotations, meta.annotations ?? {}],
    ] as const
  ) {
    for (const key of keys) {
      const path = `/metadata/${field}/${escapePointer(key)}`;
      ops.push({ op: "test", path, value: values[key] }, { op: "remove", path });
    }
  }
  return ops;
}

/** What handing a child over needs. */
export interface HandOverOptions {
  client: KubeClient;
  events: EventRecorder;
  /** The plugin's field manager, which takes the child. */
  manager: string;
  traces: FormerTraces;
  /** The parent that controls the child (the Event goes there). */
  parent: KubeObject;
  signal: AbortSignal;
}

/**
 * Reads `cached`'s child as the API server has it (the cache keeps no field sets of our own),
 * hands it to the plugin (handOverPatch) and says so. Returns the child as it is now.
 */
export async function handOver<T extends KubeObject>(
  resource: Resource,
  cached: T,
  options: HandOverOptions,
): Promise<T> {
  const { client } = options;
  const meta = cached.metadata!;
  const namespace = resource.namespaced ? meta.namespace : undefined;
  const live = await client.get(resource, meta.name!, { namespace, signal: options.signal });
  const patch = handOverPatch(live, options.manager, options.traces);
  if (!patch) return live as unknown as T;
  const patched = await client.request<KubeObject>(
    "PATCH",
    resourcePath(resource, { namespace, name: meta.name! }),
    {
      signal: options.signal,
      query: { fieldManager: options.manager },
      contentType: "application/json-patch+json",
      body: patch,
    },
  );
  const from = [...options.traces.managers].filter((m) =>
    live.metadata?.managedFields?.some((e) => e.manager === m)
  );
  options.events.record(options.parent, {
    type: "Normal",
    reason: "TakenOver",
    message: `Took over ${resource.kind} ${meta.name}, made under a former identity${
      from.length ? ` (field manager ${from.join(", ")})` : ""
    }: its fields are now ${options.manager}'s, its former label and annotation removed`,
  });
  return { ...patched, apiVersion: live.apiVersion, kind: live.kind } as T;
}
