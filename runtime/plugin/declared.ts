/** What a plugin declared: the fields it reads, the kinds it owns, and a filter on generations. */
import type { KubeObject } from "../../kube/object.ts";
import type { Resource } from "../../kube/resource.ts";
import type { StoreChange } from "../cache/mod.ts";
import type { OwnedKind, PluginSpec } from "./plugin.ts";

/**
 * What `plugin` declared it reads of `resource` (with its own kind's `status` when it writes
 * status), or undefined when it declared nothing of it.
 */
export function declaredReads(
  plugin: Pick<PluginSpec, "reads" | "for" | "writesStatus">,
  resource: Resource,
): string[] | undefined {
  const same = (r: Resource) =>
    r.group === resource.group && r.version === resource.version &&
    r.plural === resource.plural && r.labelSelector === resource.labelSelector &&
    r.fieldSelector === resource.fieldSelector;
  const declared = (plugin.reads ?? []).filter((r) => same(r.resource));
  if (!declared.length) return undefined;
  const fields = declared.flatMap((r) => r.fields);
  if (same(plugin.for) && plugin.writesStatus !== false) fields.push("status");
  return [...new Set(fields)];
}

/** The plugin's owned kinds, each with its options. */
export function ownedKinds(plugin: Pick<PluginSpec, "owns">): OwnedKind[] {
  return (plugin.owns ?? []).map((owned) => "resource" in owned ? owned : { resource: owned });
}

/**
 * A filter that passes creations, deletions and spec changes, not status-only updates.
 *
 * @example
 * ```ts
 * import { generationChanged } from "ptemplate-operator/mod.ts";
 *
 * const old = { metadata: { name: "a", generation: 1 } };
 * const statusOnly = { metadata: { name: "a", generation: 1 }, status: { ready: true } };
 * if (generationChanged({ type: "updated", object: statusOnly, old })) throw new Error("filtered");
 * ```
 */
export function generationChanged<T extends KubeObject>(change: StoreChange<T>): boolean {
  if (change.type !== "updated") return true;
  return change.object.metadata?.generation !== change.old.metadata?.generation;
}
