/**
 * The CRDs' conversion: a ConversionReview answered with every object converted to the version it
 * asks for, or with none and why, in words the person reading the API server's answer can act on
 * (an object of another group, a kind without a conversion, one that does not fit its version's
 * schema before or after). A conversion refuses what it does not understand rather than invent or
 * drop a field.
 */
import type { Unstructured } from "../../kube/object.ts";
import type { Logger, WarningThrottle } from "../observe/mod.ts";
import type { VersionSchemas } from "./version_schemas.ts";
import { CONVERSION_REVIEW, type ConversionReviewRequest, groupVersion } from "./webhook_review.ts";

/** How one CRD's objects change between its versions. */
export interface Conversion {
  /** The API group of the kind converted. */
  group: string;
  /** The kind converted. */
  kind: string;
  /**
   * The CRD with every version it serves: each object is checked against its version's schema
   * before it is converted (an unknown field, a spec that is not an object: refused) and the
   * result against the target version's. Without it, `convert` alone decides.
   */
  crd?: Unstructured;
  /**
   * The object as `apiVersion` (`group/version`). Throws a ConversionError, in words the person
   * reading the API server's answer can act on, for anything it does not understand.
   */
  convert(object: Unstructured, apiVersion: string): Unstructured;
}

/** A conversion that cannot be done, said so that the API server can pass it on as it is. */
export class ConversionError extends Error {
  /** Always `ConversionError`. */
  override readonly name = "ConversionError";
}

/** What converting needs: the conversions served, the schemas, and where failures are told. */
export interface Converter {
  /** The conversions served, by group and kind. */
  conversions: Conversion[];
  /** The version schemas objects are checked against, before and after. */
  schemas: VersionSchemas;
  /** Where a conversion that threw something else than a ConversionError is told (throttled). */
  warnings: WarningThrottle;
  /** Where a conversion that made an object its schema refuses is told. */
  log: Logger;
}

/** The answer to a ConversionReview: every object converted, or none and why (see the module doc). */
export function conversionResponse(request: ConversionReviewRequest, by: Converter): unknown {
  const response = (result: Record<string, unknown>, objects: Unstructured[] = []) => ({
    ...CONVERSION_REVIEW,
    response: { uid: request.uid, convertedObjects: objects, result },
  });
  const converted: Unstructured[] = [];
  for (const [index, object] of request.objects.entries()) {
    const out = convertOne(object, request.desiredAPIVersion, by);
    if (typeof out === "string") {
      const name = typeof object.metadata?.name === "string" ? ` (${object.metadata.name})` : "";
      return response({ status: "Failure", message: `objects[${index}]${name}: ${out}` });
    }
    converted.push(out);
  }
  return response({ status: "Success" }, converted);
}

/** One object as `to` (`group/version`), or why it cannot be. */
function convertOne(object: Unstructured, to: string, by: Converter): Unstructured | string {
  const [group] = to.split("/");
  const from = groupVersion(object);
  const kind = typeof object.kind === "string" ? object.kind : "";
  if (from.group !== group) {
    return `cannot convert ${printableVersion(object)} to another group (${to})`;
  }
  const conversion = by.conversions.find((c) => c.group === group && c.kind === kind);
  if (!conversion) return `no conversion is served for ${printableVersion(object)} ${kind}`;
  // The shape only, before and after: an object stored before a bound existed still converts.
  const problems = by.schemas.problems(object, `${from.group}/${from.version}`, kind, false);
  if (problems) return problems;
  let out: Unstructured;
  try {
    out = conversion.convert(object, to);
  } catch (error) {
    if (error instanceof ConversionError) return error.message;
    by.warnings.warn("conversion", "converting a {kind} failed: {error}", {
      kind,
      error: (error as Error)?.message ?? String(error),
    });
    return "the conversion failed; the operator's log says more";
  }
  const after = by.schemas.problems(out, to, kind, false);
  if (after) {
    by.log.error("converting a {kind} to {to} made an object its schema refuses: {after}", {
      kind,
      to,
      after,
    });
    return `the converted object does not fit ${to}: ${after}`;
  }
  return out;
}

/** An object's apiVersion as a message may repeat it: quoted, and cut when long. */
function printableVersion(object: Unstructured): string {
  const apiVersion = typeof object.apiVersion === "string" ? object.apiVersion : "";
  return JSON.stringify(apiVersion.length > 64 ? `${apiVersion.slice(0, 64)}…` : apiVersion);
}
