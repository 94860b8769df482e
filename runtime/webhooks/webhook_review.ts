/**
 * Reads the reviews the API server posts to the webhooks, and refuses anything else before it is
 * used: a body that is not JSON, or nests deeper or holds more values than any review does; the
 * wrong review for the path (an AdmissionReview at `/convert`, a ConversionReview at
 * `/validate/…`) or an apiVersion we do not serve; a request without a uid; fields of the wrong
 * type. Each refusal is an HttpError 400 in our words, never JavaScript's.
 */
import type { KubeObject, Unstructured } from "../../kube/object.ts";
import { HttpError, printable, type Requester } from "../observe/mod.ts";
import { describe, isObject } from "./schema_check.ts";

/** The review versions served: the ones the webhook configurations and the CRD name. */
export const ADMISSION_REVIEW = { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview" };
/** The ConversionReview version served at `/convert`, the one a CRD's conversion webhook names. */
export const CONVERSION_REVIEW = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "ConversionReview",
};

/** Bounds of the JSON a review may be (after the body's size, which HttpServer bounds). */
export const MAX_JSON_DEPTH = 64;
/** The most JSON values (fields and items, counted all the way down) a review may hold. */
export const MAX_JSON_VALUES = 500_000;

/** An AdmissionReview's request, checked. */
export interface AdmissionReviewRequest {
  /** The request's id, which the response must carry back. */
  uid: string;
  /** What is being done to the object. */
  operation: "CREATE" | "UPDATE" | "DELETE" | "CONNECT";
  /** What is admitted: `group`, `version`, `resource` (plural). */
  resource: { group: string; version: string; resource: string };
  /** The subresource admitted (`status`, `scale`), if it is one. */
  subResource?: string;
  /** The object's namespace; absent for a cluster-scoped kind. */
  namespace?: string;
  /** The object's name; absent on a CREATE whose name the API server generates. */
  name?: string;
  /** The object as it would be stored; absent on DELETE. */
  object?: Unstructured;
  /** The object as it is stored now: on UPDATE and DELETE. */
  oldObject?: Unstructured;
  /** A dry run: nothing will be stored, so the webhook must make no change of its own. */
  dryRun: boolean;
  /** Who asked, as the API server authenticated them. */
  userInfo?: Requester;
}

/** A ConversionReview's request, checked. */
export interface ConversionReviewRequest {
  /** The request's id, which the response must carry back. */
  uid: string;
  /** The apiVersion every object is to be converted to. */
  desiredAPIVersion: string;
  /** The objects to convert, each in the version it is stored or was sent in. */
  objects: Unstructured[];
}

/** The AdmissionReview posted to an admission path, or a 400 saying what is wrong with it. */
export function parseAdmissionReview(body: Uint8Array, path: string): AdmissionReviewRequest {
  const request = envelope(body, path, ADMISSION_REVIEW);
  const operation = request.operation;
  if (!["CREATE", "UPDATE", "DELETE", "CONNECT"].includes(operation as string)) {
    throw bad(`request.operation must be CREATE, UPDATE, DELETE or CONNECT`);
  }
  const resource = request.resource;
  if (
    !isObject(resource) || typeof resource.group !== "string" ||
    typeof resource.version !== "string" || typeof resource.resource !== "string"
  ) {
    throw bad("request.resource must be {group, version, resource}");
  }
  const object = optionalObject(request.object, "request.object");
  const oldObject = optionalObject(request.oldObject, "request.oldObject");
  for (const field of ["namespace", "name", "subResource"] as const) {
    if (request[field] !== undefined && typeof request[field] !== "string") {
      throw bad(`request.${field} must be a string, not ${describe(request[field])}`);
    }
  }
  if (request.dryRun !== undefined && typeof request.dryRun !== "boolean") {
    throw bad(`request.dryRun must be true or false, not ${describe(request.dryRun)}`);
  }
  return {
    uid: request.uid as string,
    operation: operation as AdmissionReviewRequest["operation"],
    resource: { group: resource.group, version: resource.version, resource: resource.resource },
    subResource: (request.subResource as string | undefined) || undefined,
    namespace: (request.namespace as string | undefined) || undefined,
    name: (request.name as string | undefined) || undefined,
    object,
    oldObject,
    dryRun: request.dryRun === true,
    userInfo: userInfo(request.userInfo),
  };
}

/** The ConversionReview posted to `/convert`, or a 400 saying what is wrong with it. */
export function parseConversionReview(body: Uint8Array, path: string): ConversionReviewRequest {
  const request = envelope(body, path, CONVERSION_REVIEW);
  const desired = request.desiredAPIVersion;
  if (typeof desired !== "string" || !/^[a-z0-9.-]+\/[a-z0-9]+$/.test(desired)) {
    throw bad("request.desiredAPIVersion must be group/version, e.g. pt.example.com/v1beta1");
  }
  const objects = request.objects;
  if (!Array.isArray(objects)) {
    throw bad(`request.objects must be a list of objects, not ${describe(objects)}`);
  }
  const index = objects.findIndex((o) => !isObject(o));
  if (index >= 0) {
    throw bad(`request.objects[${index}] must be an object, not ${describe(objects[index])}`);
  }
  return { uid: request.uid as string, desiredAPIVersion: desired, objects };
}

/** The review's `request`, once the body is JSON of the review this path takes. */
function envelope(
  body: Uint8Array,
  path: string,
  expected: { apiVersion: string; kind: string },
): Record<string, unknown> {
  const review = parseJson(body);
  const wanted = `${/^[AEIOU]/.test(expected.kind) ? "an" : "a"} ${expected.kind}`;
  if (!isObject(review)) throw bad(`the body must be ${wanted}, not ${describe(review)}`);
  if (review.kind !== expected.kind || review.apiVersion !== expected.apiVersion) {
    const sent = typeof review.kind === "string" && typeof review.apiVersion === "string"
      ? `${printable(review.kind)} (${printable(review.apiVersion)})`
      : "something else";
    throw bad(`${path} takes ${wanted} (${expected.apiVersion}), not ${sent}`);
  }
  const request = review.request;
  if (!isObject(request)) throw bad(`the ${expected.kind} has no request`);
  if (typeof request.uid !== "string" || !request.uid || request.uid.length > 128) {
    throw bad("request.uid must be the request's uid (a string of at most 128 characters)");
  }
  return request;
}

/** JSON.parse, after making sure the text is not deeper or larger than any review. */
export function parseJson(body: Uint8Array): unknown {
  const problem = jsonShapeProblem(body);
  if (problem) throw bad(problem);
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
  } catch {
    throw bad("the body is not JSON (UTF-8)");
  }
}

/**
 * Scans JSON text for its nesting depth and number of values without parsing it: a body of
 * `[[[[…` or of a million `{}` costs the parser far more than its size, and is refused first.
 */
function jsonShapeProblem(bytes: Uint8Array): string | undefined {
  let depth = 0;
  let values = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (inString) {
      if (byte === 0x5c) i++; // backslash: skip the escaped byte
      else if (byte === 0x22) inString = false;
      continue;
    }
    switch (byte) {
      case 0x22: // "
        inString = true;
        break;
      case 0x7b: // {
      case 0x5b: // [
        if (++depth > MAX_JSON_DEPTH) return `the JSON nests deeper than ${MAX_JSON_DEPTH} levels`;
        values++;
        break;
      case 0x7d: // }
      case 0x5d: // ]
        depth--;
        break;
      case 0x2c: // ,
        if (++values > MAX_JSON_VALUES) {
          return `the JSON has more than ${MAX_JSON_VALUES} values`;
        }
        break;
    }
  }
  return undefined;
}

function optionalObject(value: unknown, field: string): Unstructured | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) throw bad(`${field} must be an object, not ${describe(value)}`);
  return value;
}

/** The requester, when the review says who; anything malformed is a 400. */
function userInfo(value: unknown): Requester | undefined {
  if (value === undefined || value === null) return undefined;
  const strings = (v: unknown) => Array.isArray(v) && v.every((s) => typeof s === "string");
  if (
    !isObject(value) || typeof value.username !== "string" ||
    (value.uid !== undefined && typeof value.uid !== "string") ||
    (value.groups !== undefined && !strings(value.groups)) ||
    (value.extra !== undefined &&
      (!isObject(value.extra) || !Object.values(value.extra).every(strings)))
  ) {
    throw bad("request.userInfo must be {username, uid, groups, extra} of strings");
  }
  if (!value.username) return undefined;
  return {
    username: value.username,
    uid: value.uid as string | undefined,
    groups: value.groups as string[] | undefined,
    extra: value.extra as Record<string, string[]> | undefined,
  };
}

/** The `group/version` of an object's apiVersion (`v1` is the core group). */
export function groupVersion(object: KubeObject): { group: string; version: string } {
  const apiVersion = typeof object.apiVersion === "string" ? object.apiVersion : "";
  const slash = apiVersion.indexOf("/");
  return slash < 0
    ? { group: "", version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

function bad(message: string): HttpError {
  return new HttpError(400, message);
}
