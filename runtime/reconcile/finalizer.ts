/**
 * A plugin's finalizer on the objects it reconciles: added before its first reconcile, removed
 * once its `finalize` has cleaned up, so the object goes only after what the plugin made outside
 * Kubernetes is gone. Both writes carry the resourceVersion read, so a concurrent change (someone
 * else's finalizer, a spec edit) is a conflict that is retried, never a lost update.
 */
import type { KubeClient } from "../../kube/client.ts";
import type { KubeObject } from "../../kube/object.ts";
import type { Resource } from "../../kube/resource.ts";
import { defaultFinalizerOf, type OperatorIdentity } from "../identity/mod.ts";

/** A plugin as its finalizer sees it: its name, and the finalizer it names, if it does. */
export type Finalizing = { name: string; finalizer?: string };

/**
 * The finalizer a plugin puts on its objects (a qualified name, as the API server prefers): its
 * own, or `<the operator's finalizer domain>/<plugin name>`.
 */
export function finalizerOf(plugin: Finalizing, operator: OperatorIdentity): string {
  return plugin.finalizer ?? defaultFinalizerOf(operator, plugin.name);
}

/**
 * The plugin's finalizer and those an earlier version of the operator put on its objects by
 * default, which are still the plugin's (a plugin that names its own never had those).
 */
function finalizersOf(plugin: Finalizing, operator: OperatorIdentity): string[] {
  const earlier = plugin.finalizer === undefined
    ? operator.legacyFinalizerDomains.map((domain) => `${domain}/${plugin.name}`)
    : [];
  return [finalizerOf(plugin, operator), ...earlier];
}

/** True when `object` holds the plugin's finalizer (or one an earlier version put there). */
export function hasFinalizer(
  object: KubeObject,
  plugin: Finalizing,
  operator: OperatorIdentity,
): boolean {
  const ours = finalizersOf(plugin, operator);
  return object.metadata?.finalizers?.some((f) => ours.includes(f)) ?? false;
}

/**
 * Adds (`present`) or removes the plugin's finalizer on the object as read (removing takes an
 * earlier version's along), or fails with a 409 when the object has changed since.
 */
export async function setFinalizer(
  client: KubeClient,
  resource: Resource,
  object: KubeObject,
  plugin: Finalizing,
  operator: OperatorIdentity,
  options: { present: boolean; signal?: AbortSignal },
): Promise<void> {
  const [finalizer, ...earlier] = finalizersOf(plugin, operator);
  const ours = [finalizer, ...earlier];
  const others = (object.metadata?.finalizers ?? []).filter((f) => !ours.includes(f));
  const finalizers = options.present ? [...others, finalizer] : others;
  const meta = object.metadata ?? {};
  // A merge patch replaces the whole list; the resourceVersion makes that safe.
  await client.patch(resource, meta.name!, {
    metadata: { resourceVersion: meta.resourceVersion, finalizers },
  }, { namespace: resource.namespaced ? meta.namespace : undefined, signal: options.signal });
}
