/**
 * A plugin's finalizer on the objects it reconciles: added before its first reconcile, removed
 * once its `finalize` has cleaned up, so the object goes only after what the plugin made outside
 * Kubernetes is gone. Both writes carry the resourceVersion read, so a concurrent change (someone
 * else's finalizer, a spec edit) is a conflict that is retried, never a lost update.
 */
import type { KubeClient, KubeObject } from "../kube/client.ts";
import type { Resource } from "../kube/resource.ts";

/** The finalizer a plugin puts on its objects (a qualified name, as the API server prefers). */
export function finalizerOf(plugin: { name: string; finalizer?: string }): string {
  return plugin.finalizer ?? `operator.pt.example.com/${plugin.name}`;
}

export function hasFinalizer(object: KubeObject, finalizer: string): boolean {
  return object.metadata?.finalizers?.includes(finalizer) ?? false;
}

/** Adds `finalizer` to the object as read, or fails with a 409 when it has changed since. */
export async function addFinalizer(
  client: KubeClient,
  resource: Resource,
  object: KubeObject,
  finalizer: string,
  signal?: AbortSignal,
): Promise<void> {
  const finalizers = [...(object.metadata?.finalizers ?? []), finalizer];
  await writeFinalizers(client, resource, object, finalizers, signal);
}

/** Removes `finalizer` from the object as read, or fails with a 409 when it has changed since. */
export async function removeFinalizer(
  client: KubeClient,
  resource: Resource,
  object: KubeObject,
  finalizer: string,
  signal?: AbortSignal,
): Promise<void> {
  const finalizers = (object.metadata?.finalizers ?? []).filter((f) => f !== finalizer);
  await writeFinalizers(client, resource, object, finalizers, signal);
}

async function writeFinalizers(
  client: KubeClient,
  resource: Resource,
  object: KubeObject,
  finalizers: string[],
  signal?: AbortSignal,
): Promise<void> {
  const meta = object.metadata ?? {};
  // A merge patch replaces the whole list; the resourceVersion makes that safe.
  await client.patch(resource, meta.name!, {
    metadata: { resourceVersion: meta.resourceVersion, finalizers },
  }, { namespace: resource.namespaced ? meta.namespace : undefined, signal });
}
