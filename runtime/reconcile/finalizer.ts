/**
 * A plugin's finalizer on the objects it reconciles: added before its first reconcile, removed
 * once its `finalize` has cleaned up, so the object goes only after what the plugin made outside
 * Kubernetes is gone. Both writes carry the resourceVersion read, so a concurrent change (someone
 * else's finalizer, a spec edit) is a conflict that is retried, never a lost update.
 */
import type { KubeClient } from "../../kube/client.ts";
import type { KubeObject } from "../../kube/object.ts";
import type { Resource } from "../../kube/resource.ts";

/** The finalizer a plugin puts on its objects (a qualified name, as the API server prefers). */
export function finalizerOf(plugin: { name: string; finalizer?: string }): string {
  return plugin.finalizer ?? `operator.pt.example.com/${plugin.name}`;
}

export function hasFinalizer(object: KubeObject, finalizer: string): boolean {
  return object.metadata?.finalizers?.includes(finalizer) ?? false;
}

/**
 * Adds (`present`) or removes `finalizer` on the object as read, or fails with a 409 when the
 * object has changed since.
 */
export async function setFinalizer(
  client: KubeClient,
  resource: Resource,
  object: KubeObject,
  finalizer: string,
  options: { present: boolean; signal?: AbortSignal },
): Promise<void> {
  const others = (object.metadata?.finalizers ?? []).filter((f) => f !== finalizer);
  const finalizers = options.present ? [...others, finalizer] : others;
  const meta = object.metadata ?? {};
  // A merge patch replaces the whole list; the resourceVersion makes that safe.
  await client.patch(resource, meta.name!, {
    metadata: { resourceVersion: meta.resourceVersion, finalizers },
  }, { namespace: resource.namespaced ? meta.namespace : undefined, signal: options.signal });
}
