/**
 * Drops from a cached object what no plugin reads, before it is stored: the field sets of
 * `managedFields` (who manages what stays: the applier needs that), kubectl's last-applied
 * annotation, and a node's list of images. About half of every cached object, as
 * controller-runtime's TransformStripManagedFields does. For the kinds the runtime writes as
 * children, the field sets of other managers stay: they say what someone else added to a child
 * (see foreign_fields.ts), and a converged child has none, so they cost nothing there.
 */
import type { KubeObject } from "../../kube/object.ts";

const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";

/** What `slim` keeps that it would otherwise drop. */
export interface SlimOptions {
  /**
   * Keep the field sets of entries whose manager is not one of these (and that are not a
   * subresource's): the runtime's own field managers, for kinds it writes as children.
   */
  keepFieldSetsExcept?: ReadonlySet<string>;
}

/** Slims `object` in place (it was just parsed and is ours alone) and returns it. */
export function slim<T extends KubeObject>(object: T, options: SlimOptions = {}): T {
  const meta = object.metadata;
  const ours = options.keepFieldSetsExcept;
  if (meta?.managedFields) {
    meta.managedFields = meta.managedFields.map((entry) => {
      const { manager, operation, subresource } = entry;
      if (ours && !subresource && !ours.has(manager ?? "")) return entry;
      return { manager, operation, ...(subresource ? { subresource } : {}) };
    });
  }
  if (meta?.annotations?.[LAST_APPLIED]) {
    const { [LAST_APPLIED]: _, ...rest } = meta.annotations;
    meta.annotations = rest;
  }
  const status = (object as { status?: { images?: unknown } }).status;
  if (object.kind === "Node" && status?.images) delete status.images;
  return object;
}
