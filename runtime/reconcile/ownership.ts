/**
 * The ownership rule, in one place for the applier, the status plugins and admission alike: a
 * child is written only when it does not exist or its controller owner reference points at the
 * parent; anything else is someone else's (or nobody's), is left alone, and is reported in one
 * sentence that says what to do.
 */
import type { KubeObject, OwnerReference } from "../../kube/object.ts";
import {
  describeRef,
  type ObjectRef,
  objectRef,
  ownerRefOf,
  sameObject,
} from "../../kube/object_ref.ts";
import type { Resource } from "../../kube/resource.ts";
import type { ChildProblem } from "../plugin/mod.ts";

export type { OwnerReference };

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

/**
 * Where `object` (the one named like a child, or undefined: missing) stands with respect to
 * `parent`: ours when its controller owner reference names the parent, else someone else's, or
 * nobody's. The parent is compared by uid when its ref has one (a namesake made since is another
 * parent), else by kind and name (admission, before the parent exists).
 *
 * @example
 * ```ts
 * import { ownershipOf } from "ptemplate-operator/mod.ts";
 *
 * const parent = { group: "pt.example.com", kind: "Ptemplate", namespace: "ns", name: "p", uid: "u-1" };
 * const child = {
 *   metadata: {
 *     name: "p", namespace: "ns",
 *     ownerReferences: [{ apiVersion: "pt.example.com/v1alpha1", kind: "Ptemplate", name: "p", uid: "u-1", controller: true }],
 *   },
 * };
 * if (ownershipOf(child, parent).state !== "ours") throw new Error("ours by uid");
 * if (ownershipOf(undefined, parent).state !== "absent") throw new Error("missing");
 * ```
 */
export function ownershipOf(object: KubeObject | undefined, parent: ObjectRef): Ownership {
  if (!object) return { state: "absent" };
  const controller = controllerOf(object);
  if (!controller) return { state: "uncontrolled" };
  // An owner is in its dependent's namespace, or cluster-scoped (as the parent's ref says).
  const owner = ownerRefOf(controller, parent.namespace && object.metadata?.namespace);
  if (sameObject(owner, parent)) return { state: "ours" };
  return { state: "controlled-elsewhere", controller };
}

/**
 * One sentence that names the object in the way (`child`), whose it is and what to do about it,
 * for Events, logs, status conditions and admission warnings; undefined when it is not in the way.
 */
export function ownershipProblem(child: ObjectRef, ownership: Ownership): string | undefined {
  const name = describeRef(child);
  if (ownership.state === "controlled-elsewhere") {
    const { kind: ownerKind, name: ownerName } = ownership.controller;
    return `${name} already exists and is controlled by ${ownerKind} ${ownerName}; ` +
      `it is left alone: rename or delete it (or the ${ownerKind}), and it is created anew`;
  }
  if (ownership.state === "uncontrolled") {
    return `${name} already exists and is not ours (no controller owner reference); ` +
      `it is left alone: delete or rename it, and it is created anew`;
  }
  return undefined;
}

/**
 * The child problem `plugin` reports for `object` of `resource`, named like one of `parent`'s
 * children, when it is in the way (someone else's, or nobody's); undefined when it is ours or
 * missing.
 *
 * @example A status plugin saying why a child is not there.
 * ```ts
 * import { childProblem, CONFIG_MAP } from "ptemplate-operator/mod.ts";
 *
 * const parent = { group: "example.com", kind: "Greeting", namespace: "ns", name: "g", uid: "u" };
 * const squatter = { metadata: { name: "g-greeting", namespace: "ns" } }; // nobody's
 * const problem = childProblem("greeting", CONFIG_MAP, squatter, parent);
 * if (problem?.reason !== "ChildNameTaken") throw new Error(problem?.message);
 * ```
 */
export function childProblem(
  plugin: string,
  resource: Resource,
  object: KubeObject | undefined,
  parent: ObjectRef,
): ChildProblem | undefined {
  const ownership = ownershipOf(object, parent);
  if (!object || ownership.state === "absent" || ownership.state === "ours") return undefined;
  const child = objectRef(resource, object);
  return {
    plugin,
    kind: child.kind,
    name: child.name,
    reason: ownership.state === "controlled-elsewhere" ? "ChildOwnedElsewhere" : "ChildNameTaken",
    message: ownershipProblem(child, ownership)!,
  };
}
