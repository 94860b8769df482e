/**
 * Who controls an object, as the ownership rule sees it: a child is written only when it does not
 * exist or its controller owner reference points at the parent; anything else is someone else's.
 */
import type { KubeObject } from "../../kube/object.ts";

/** An owner reference, as it appears in `metadata.ownerReferences`. */
export type OwnerReference = NonNullable<
  NonNullable<KubeObject["metadata"]>["ownerReferences"]
>[number];

/** Where an object named like a child stands with respect to a parent. */
export type Ownership =
  | { state: "absent" }
  | { state: "ours" }
  | { state: "controlled-elsewhere"; controller: OwnerReference }
  | { state: "uncontrolled" };

/**
 * The controller owner reference of `object`, if any.
 *
 * @example
 * ```ts
 * import { controllerOf } from "ptemplate-operator/mod.ts";
 *
 * const pod = {
 *   metadata: {
 *     name: "p",
 *     ownerReferences: [{ apiVersion: "apps/v1", kind: "DaemonSet", name: "ds", uid: "u", controller: true }],
 *   },
 * };
 * if (controllerOf(pod)?.kind !== "DaemonSet") throw new Error("no controller");
 * ```
 */
export function controllerOf(object: KubeObject | undefined): OwnerReference | undefined {
  return object?.metadata?.ownerReferences?.find((ref) => ref.controller);
}

/** How `object` (the cached one named like a child, or undefined) relates to the parent `uid`. */
export function ownershipOf(object: KubeObject | undefined, parentUid: string): Ownership {
  if (!object) return { state: "absent" };
  const controller = controllerOf(object);
  if (!controller) return { state: "uncontrolled" };
  if (controller.uid === parentUid) return { state: "ours" };
  return { state: "controlled-elsewhere", controller };
}

/**
 * One sentence that names the object in the way and what to do about it, for Events, logs and
 * status conditions.
 */
export function ownershipProblem(
  kind: string,
  object: KubeObject,
  ownership: Ownership,
): string | undefined {
  const meta = object.metadata ?? {};
  const name = meta.namespace ? `${meta.namespace}/${meta.name}` : `${meta.name}`;
  if (ownership.state === "controlled-elsewhere") {
    const { kind: ownerKind, name: ownerName } = ownership.controller;
    return `${kind} ${name} already exists and is controlled by ${ownerKind} ${ownerName}; ` +
      `it is left alone: rename or delete it (or the ${ownerKind}), and it is created anew`;
  }
  if (ownership.state === "uncontrolled") {
    return `${kind} ${name} already exists and is not ours (no controller owner reference); ` +
      `it is left alone: delete or rename it, and it is created anew`;
  }
  return undefined;
}
