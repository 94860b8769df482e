/**
 * The best-practice checks operator-sdk's scorecard runs in its basic and OLM suites, over a
 * bundle's files: CRDs with described spec and status, a CSV that describes every owned CRD and
 * what it makes, alm-examples that fit their CRD's schema, conditions with a status descriptor.
 */
import { parse } from "yaml";
import type { Unstructured } from "../mod.ts";
import type { BundleFile } from "./olm_bundle.ts";
import { type OpenApiSchema, storedVersion } from "../kube/custom_resource_definition.ts";

/** One check of a bundle and what it found. */
export interface CheckResult {
  /** The check's name. */
  check: string;
  /** Empty when the check passed. */
  problems: string[];
}

type Schema = OpenApiSchema;

interface Descriptor {
  path: string;
  description?: string;
  "x-descriptors"?: string[];
}

interface OwnedCrd {
  name: string;
  version: string;
  kind: string;
  displayName?: string;
  description?: string;
  resources?: unknown[];
  specDescriptors?: Descriptor[];
  statusDescriptors?: Descriptor[];
}

/** Problems of `value` against an OpenAPI v3 schema (CEL rules are the API server's to check). */
export function schemaProblems(value: unknown, schema: Schema, path: string): string[] {
  const problems: string[] = [];
  const type = Array.isArray(value) ? "array" : value === null ? "null" : typeof value;
  const expected = schema.type;
  if (
    expected === "integer"
      ? !Number.isInteger(value)
      : expected && expected !== (type === "number" ? "number" : type)
  ) {
    return [`${path} is ${type}, the schema says ${expected}`];
  }
  if (schema.enum && !schema.enum.includes(value)) {
    problems.push(`${path} is not one of ${schema.enum.join(", ")}`);
  }
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) {
      problems.push(`${path} is below ${schema.minimum}`);
    }
    if (schema.maximum !== undefined && value > schema.maximum) {
      problems.push(`${path} is above ${schema.maximum}`);
    }
  }
  if (typeof value === "string") {
    if (schema.maxLength !== undefined && value.length > schema.maxLength) {
      problems.push(`${path} is longer than ${schema.maxLength}`);
    }
    if (schema.minLength !== undefined && value.length < schema.minLength) {
      problems.push(`${path} is shorter than ${schema.minLength}`);
    }
    if (schema.pattern && !new RegExp(schema.pattern).test(value)) {
      problems.push(`${path} does not match ${schema.pattern}`);
    }
  }
  if (Array.isArray(value) && schema.items) {
    value.forEach((item, i) =>
      problems.push(...schemaProblems(item, schema.items!, `${path}[${i}]`))
    );
  }
  if (type === "object") {
    const object = value as Record<string, unknown>;
    for (const key of schema.required ?? []) {
      if (!(key in object)) problems.push(`${path}.${key} is required`);
    }
    if (schema.maxProperties !== undefined && Object.keys(object).length > schema.maxProperties) {
      problems.push(`${path} has more than ${schema.maxProperties} entries`);
    }
    for (const [key, field] of Object.entries(object)) {
      const sub = schema.properties?.[key] ??
        (typeof schema.additionalProperties === "object" ? schema.additionalProperties : undefined);
      if (sub) problems.push(...schemaProblems(field, sub, `${path}.${key}`));
      else if (
        schema.properties && schema.additionalProperties !== true && path !== "" &&
        key !== "metadata"
      ) {
        problems.push(`${path}.${key} is not in the schema`);
      }
    }
  }
  return problems;
}

/** Runs every check over the bundle's files. */
export function bundleChecks(files: BundleFile[]): CheckResult[] {
  const manifests = files.filter((f) => /^bundle\/manifests\/.+\.yaml$/.test(f.path))
    .map((f) => parse(f.text) as Unstructured);
  const csv = manifests.find((m) => m.kind === "ClusterServiceVersion");
  const crds = manifests.filter((m) => m.kind === "CustomResourceDefinition");
  if (!csv) return [{ check: "bundle has a ClusterServiceVersion", problems: ["none found"] }];
  const owned = ((csv.spec as { customresourcedefinitions?: { owned?: OwnedCrd[] } })
    .customresourcedefinitions?.owned) ?? [];
  const results: CheckResult[] = [];

  const described: string[] = [];
  for (const crd of crds) {
    const { schema } = storedVersion(crd);
    for (const block of ["spec", "status"]) {
      const part = schema.properties?.[block];
      if (!part) {
        described.push(`${crd.metadata!.name}: no ${block} block`);
        continue;
      }
      for (const [field, sub] of Object.entries(part.properties ?? {})) {
        if (!sub.description) {
          described.push(`${crd.metadata!.name}: ${block}.${field} has no description`);
        }
      }
    }
  }
  results.push({
    check: "every CRD has a spec and a status, each field described",
    problems: described,
  });

  const describes: string[] = [];
  for (const crd of crds) {
    const { name: version, schema } = storedVersion(crd);
    const entry = owned.find((o) => o.name === crd.metadata!.name);
    if (!entry) {
      describes.push(`${crd.metadata!.name} is not among the CSV's owned CRDs`);
      continue;
    }
    if (entry.version !== version) {
      describes.push(`${entry.name}: owned version ${entry.version}, storage version ${version}`);
    }
    if (!entry.displayName || !entry.description) {
      describes.push(`${entry.name}: no displayName or description`);
    }
    if (!entry.resources?.length) describes.push(`${entry.name}: lists no resources it creates`);
    for (
      const [block, key] of [["spec", "specDescriptors"], ["status", "statusDescriptors"]] as const
    ) {
      for (const field of Object.keys(schema.properties?.[block]?.properties ?? {})) {
        const descriptor = entry[key]?.find((d) => d.path === field);
        if (!descriptor?.description) {
          describes.push(`${entry.name}: ${block}.${field} has no described ${key} entry`);
        }
      }
    }
  }
  for (const entry of owned) {
    if (!crds.some((c) => c.metadata!.name === entry.name)) {
      describes.push(`${entry.name}: owned but not in the bundle`);
    }
  }
  results.push({
    check: "the CSV describes every owned CRD and what it creates",
    problems: describes,
  });

  const examples: string[] = [];
  const annotations = (csv.metadata?.annotations ?? {}) as Record<string, string>;
  let almExamples: Unstructured[] = [];
  try {
    almExamples = JSON.parse(annotations["alm-examples"] ?? "[]");
  } catch (error) {
    examples.push(`alm-examples is not JSON: ${(error as Error).message}`);
  }
  if (!almExamples.length && owned.length) examples.push("alm-examples has no example");
  for (const example of almExamples) {
    const crd = crds.find((c) => {
      const spec = c.spec as {
        group: string;
        names: { kind: string };
        versions: { name: string }[];
      };
      return spec.names.kind === example.kind &&
        spec.versions.some((v) => `${spec.group}/${v.name}` === example.apiVersion);
    });
    if (!crd) {
      examples.push(`${example.apiVersion} ${example.kind}: no CRD in the bundle serves it`);
      continue;
    }
    examples.push(
      ...schemaProblems(example, storedVersion(crd).schema, "").map((p) =>
        `${example.kind} ${example.metadata?.name}: ${p}`
      ),
    );
  }
  for (const kind of owned.map((o) => o.kind)) {
    if (!almExamples.some((e) => e.kind === kind)) examples.push(`no alm-example of ${kind}`);
  }
  results.push({ check: "alm-examples fit their CRDs", problems: examples });

  const conditions: string[] = [];
  for (const crd of crds) {
    const { schema } = storedVersion(crd);
    if (!schema.properties?.status?.properties?.conditions) continue;
    const entry = owned.find((o) => o.name === crd.metadata!.name);
    const descriptor = entry?.statusDescriptors?.find((d) => d.path === "conditions");
    if (!descriptor?.["x-descriptors"]?.includes("urn:alm:descriptor:io.kubernetes.conditions")) {
      conditions.push(
        `${crd.metadata!.name}: status.conditions has no conditions status descriptor`,
      );
    }
  }
  results.push({ check: "conditions have a status descriptor", problems: conditions });
  return results;
}
