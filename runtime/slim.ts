/**
 * Drops from a cached object what no plugin reads, before it is stored: the field sets of
 * `managedFields` (who manages what stays: the applier needs that), kubectl's last-applied
 * annotation, and a node's list of images. About half of every cached object, as
 * controller-runtime's TransformStripManagedFields does.
 */
import type { KubeObject } from "../kube/client.ts";

const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";

/** Slims `object` in place (it was just parsed and is ours alone) and returns it. */
export function slim<T extends KubeObject>(object: T): T {
  const meta = object.metadata;
  if (meta?.managedFields) {
    meta.managedFields = meta.managedFields.map(({ manager, operation, subresource }) => ({
      manager,
      operation,
      ...(subresource ? { subresource } : {}),
    }));
  }
  if (meta?.annotations?.[LAST_APPLIED]) {
    const { [LAST_APPLIED]: _, ...rest } = meta.annotations;
    meta.annotations = rest;
  }
  const status = (object as { status?: { images?: unknown } }).status;
  if (object.kind === "Node" && status?.images) delete status.images;
  return object;
}
