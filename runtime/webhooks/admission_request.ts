/**
 * An AdmissionReview's request as a plugin sees it: about the plugin's kind, in the namespace it
 * says, each object fitting its version's schema (the stored one its shape only, the new one for
 * what it adds to it) and converted to the plugin's version; an HttpError 400 naming the field
 * otherwise.
 */
import type { Unstructured } from "../../kube/object.ts";
import { HttpError } from "../observe/mod.ts";
import type { AdmissionRequest, Plugin } from "../plugin/mod.ts";
import { type Conversion, ConversionError } from "./crd_conversion.ts";
import type { VersionSchemas } from "./version_schemas.ts";
import { type AdmissionReviewRequest, groupVersion } from "./webhook_review.ts";

/** The review's request for `plugin`, checked and in its version (see the module doc). */
export function admissionRequest(
  plugin: Pick<Plugin, "for">,
  review: AdmissionReviewRequest,
  known: { schemas: VersionSchemas; conversions: Conversion[] },
): AdmissionRequest {
  const kind = plugin.for;
  if (review.resource.group !== kind.group || review.resource.resource !== kind.plural) {
    throw new HttpError(
      400,
      `this webhook admits ${kind.plural}.${kind.group || "core"}, not ` +
        `${review.resource.resource}.${review.resource.group || "core"}`,
    );
  }
  if (kind.namespaced !== Boolean(review.namespace)) {
    throw new HttpError(
      400,
      `${kind.kind} is ${
        kind.namespaced
          ? "namespaced: the request needs a namespace"
          : "cluster-scoped: the request has a namespace"
      }`,
    );
  }
  // The stored object is checked for its shape only, and the new one for what it adds to it.
  const inPluginVersion = (
    object: Unstructured | undefined,
    field: string,
    old?: Unstructured,
  ) => {
    if (!object) return undefined;
    const { group, version } = groupVersion(object);
    if (group !== kind.group || object.kind !== kind.kind) {
      throw new HttpError(400, `${field} must be a ${kind.kind} of ${kind.group || "core"}`);
    }
    const namespace = object.metadata?.namespace;
    if (namespace !== undefined && namespace !== review.namespace) {
      throw new HttpError(400, `${field}.metadata.namespace is not the request's namespace`);
    }
    const stored = field === "request.oldObject";
    const problems = known.schemas.problems(
      object,
      `${group}/${version}`,
      kind.kind,
      !stored,
      old,
    );
    if (problems) throw new HttpError(400, `${field}: ${problems}`);
    if (version === kind.version) return object;
    const conversion = known.conversions.find((c) =>
      c.group === kind.group && c.kind === kind.kind
    );
    if (!conversion) {
      throw new HttpError(400, `${field} is ${kind.group}/${version}, not ${kind.version}`);
    }
    try {
      return conversion.convert(object, `${kind.group}/${kind.version}`);
    } catch (error) {
      if (error instanceof ConversionError) {
        throw new HttpError(400, `${field}: ${error.message}`);
      }
      throw error;
    }
  };
  return {
    operation: review.operation,
    namespace: review.namespace,
    name: review.name,
    object: inPluginVersion(review.object, "request.object", review.oldObject),
    oldObject: inPluginVersion(review.oldObject, "request.oldObject"),
    dryRun: review.dryRun,
    username: review.userInfo?.username,
    userInfo: review.userInfo,
  };
}
