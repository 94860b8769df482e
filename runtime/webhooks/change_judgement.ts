/**
 * Judges an admission request by the change it makes, never by the state it leaves, so that a
 * rule added after an object was stored never strands it: a create is judged in full; an update
 * is refused only for what it makes worse (a refusal the old object does not already earn); and
 * nothing a deletion needs is ever refused (DELETE itself, any update of an object being deleted,
 * and updates of metadata or status alone: labels, finalizers, owner references, the garbage
 * collector's patches).
 */
import { isDeepStrictEqual } from "node:util";
import type { KubeObject } from "../../kube/object.ts";
import type {
  AdmissionContext,
  AdmissionRequest,
  AdmissionVerdict,
  Plugin,
} from "../plugin/mod.ts";

/** Whether a refusal may apply to `request` at all (see the module's doc). */
export function mayRefuse(request: AdmissionRequest): boolean {
  if (request.operation === "CREATE") return true;
  if (request.operation !== "UPDATE" || !request.object || !request.oldObject) return false;
  if (request.object.metadata?.deletionTimestamp) return false;
  return changesBeyondMetadataAndStatus(request.object, request.oldObject);
}

/** Whether `object` differs from `old` anywhere but `metadata` and `status`. */
export function changesBeyondMetadataAndStatus(object: KubeObject, old: KubeObject): boolean {
  const rest = (o: KubeObject) => {
    const { metadata: _, status: __, apiVersion: ___, ...others } = o as Record<string, unknown>;
    return others;
  };
  return !isDeepStrictEqual(rest(object), rest(old));
}

/**
 * The plugin's verdict, judged as a change: a denial of an update stands only when the old
 * object, judged as a create, is not denied with the same words; otherwise the update does not
 * make it worse, and the denial becomes a warning that says what is still wrong.
 */
export async function judgedVerdict(
  validate: NonNullable<Plugin["validate"]>,
  request: AdmissionRequest,
  context: AdmissionContext,
): Promise<AdmissionVerdict> {
  const verdict = await validate(request, context) ?? {};
  if (!verdict.denied) return verdict;
  const stands = mayRefuse(request) &&
    (request.operation === "CREATE" || (await oldDenial(validate, request, context)) !==
        verdict.denied);
  if (stands) return verdict;
  return {
    warnings: [
      ...verdict.warnings ?? [],
      `${verdict.denied} (already so before this update, which does not make it worse, so it ` +
      `is let through; fix it when you can)`,
    ],
  };
}

/** What the plugin says of the old object as if it were created now. */
async function oldDenial(
  validate: NonNullable<Plugin["validate"]>,
  request: AdmissionRequest,
  context: AdmissionContext,
): Promise<string | undefined> {
  const old = await validate({
    ...request,
    operation: "CREATE",
    object: request.oldObject,
    oldObject: undefined,
  }, context);
  return old?.denied;
}

/** The problems of `problems` that `old` does not have too: what an update adds. */
export function addedProblems(problems: string[], old: string[]): string[] {
  const before = new Set(old);
  return problems.filter((p) => !before.has(p));
}
