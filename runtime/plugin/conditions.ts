/** Status conditions the Kubernetes way: one per type, with a transition time that moves only on change. */

export interface Condition {
  /** What it is about, e.g. `Ready`. */
  type: string;
  /** Whether it holds. */
  status: "True" | "False" | "Unknown";
  /** Why, as a CamelCase word (`NoMatchingNodes`). */
  reason: string;
  /** Why, in a sentence that says what to do. */
  message: string;
  /** When `status` last changed (RFC 3339). */
  lastTransitionTime: string;
  /** The generation of the object it was decided from. */
  observedGeneration?: number;
}

/** A condition as a plugin computes it; the transition time is filled in by `mergeConditions`. */
export type ConditionInput = Omit<Condition, "lastTransitionTime">;

/**
 * The new conditions, keeping each one's `lastTransitionTime` from `previous` while its status
 * is unchanged, so an unchanged world yields an identical status (and no write).
 *
 * @example
 * ```ts
 * import { mergeConditions } from "ptemplate-operator/mod.ts";
 *
 * const ready = { type: "Ready", status: "True" as const, reason: "Available", message: "ok" };
 * const first = mergeConditions(undefined, [ready], new Date("2026-01-01T00:00:00Z"));
 * const again = mergeConditions(first, [ready], new Date("2026-06-01T00:00:00Z"));
 * if (again[0].lastTransitionTime !== first[0].lastTransitionTime) throw new Error("moved");
 * ```
 */
export function mergeConditions(
  previous: Condition[] | undefined,
  next: ConditionInput[],
  now: Date = new Date(),
): Condition[] {
  return next.map((condition) => {
    const old = previous?.find((c) => c.type === condition.type);
    const lastTransitionTime = old && old.status === condition.status
      ? old.lastTransitionTime
      : now.toISOString().replace(/\.\d{3}Z$/, "Z");
    return { ...condition, lastTransitionTime };
  });
}

/**
 * The schema of `status.conditions` for a CRD (`status: { conditions: CONDITIONS_SCHEMA }`):
 * metav1.Condition's fields, a list keyed by `type`, as `mergeConditions` writes it.
 */
export const CONDITIONS_SCHEMA: Record<string, unknown> = {
  type: "array",
  description: "The latest observations of the object's state (Ready first).",
  "x-kubernetes-list-type": "map",
  "x-kubernetes-list-map-keys": ["type"],
  items: {
    type: "object",
    required: ["type", "status", "lastTransitionTime", "reason", "message"],
    properties: {
      type: { type: "string" },
      status: { type: "string", enum: ["True", "False", "Unknown"] },
      observedGeneration: { type: "integer" },
      lastTransitionTime: { type: "string", format: "date-time" },
      reason: { type: "string" },
      message: { type: "string" },
    },
  },
};
