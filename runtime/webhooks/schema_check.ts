/**
 * Checks a value against a CRD's structural schema, the parts that say what shape it has: types,
 * the fields an object may have (anything else is an unknown field, never passed on), required
 * fields, enums, lengths, counts and bounds. Patterns and CEL rules are the API server's to
 * enforce; this is for what reaches us from outside it (webhook reviews), where a shape we do not
 * know must be refused rather than guessed at. Field names are looked up as own properties only,
 * so `constructor` or `__proto__` is an unknown field like any other.
 *
 * With `{ bounds: false }` only the shape is checked (types and known fields), not the bounds a
 * value must keep (lengths, counts, ranges, enums, required fields): a conversion needs the shape,
 * and an object stored before a bound existed must still convert.
 */
import type { Unstructured } from "../../kube/object.ts";
import type { OpenApiSchema } from "../../kube/custom_resource_definition.ts";

/** What the checker reads of a schema, beyond `OpenApiSchema`. */
type Schema = OpenApiSchema & {
  maxItems?: number;
  minItems?: number;
  minProperties?: number;
  "x-kubernetes-preserve-unknown-fields"?: boolean;
  "x-kubernetes-int-or-string"?: boolean;
};

/** Problems after which checking stops: enough to act on, bounded whatever the input. */
const MAX_PROBLEMS = 8;

/**
 * Where `value` does not fit `schema`, each as `field: problem`; empty when it fits. `path` is
 * the field `value` is (`spec`, or `` for the root).
 */
export function schemaProblems(
  value: unknown,
  schema: OpenApiSchema,
  path = "",
  options: { bounds?: boolean } = {},
): string[] {
  const problems: string[] = [];
  check(value, schema as Schema, path, { problems, bounds: options.bounds ?? true });
  return problems;
}

/**
 * A Kubernetes object against its version's schema: `metadata` as every object has it (name,
 * namespace, labels and annotations as strings), the rest as the schema says.
 */
export function objectProblems(
  object: unknown,
  schema: OpenApiSchema,
  options: { bounds?: boolean } = {},
): string[] {
  if (!isObject(object)) return [`the object is ${describe(object)}, not an object`];
  const found: Found = { problems: [], bounds: options.bounds ?? true };
  const metadata = object.metadata;
  if (metadata !== undefined) {
    check(metadata, METADATA, "metadata", found);
  }
  const { metadata: _, ...rest } = object;
  const { metadata: __, ...properties } = (schema as Schema).properties ?? {};
  check(rest, { ...schema, properties } as Schema, "", found);
  return found.problems;
}

/** The problems found so far, and whether bounds count. */
interface Found {
  problems: string[];
  bounds: boolean;
}

/** The metadata fields webhooks read or pass on; the API server fills in and checks the rest. */
const STRING_MAP: Schema = { type: "object", additionalProperties: { type: "string" } };
const METADATA: Schema = {
  type: "object",
  properties: {
    name: { type: "string", maxLength: 253 },
    generateName: { type: "string" },
    namespace: { type: "string", maxLength: 63 },
    uid: { type: "string" },
    resourceVersion: { type: "string" },
    generation: { type: "integer" },
    creationTimestamp: { type: "string", nullable: true },
    deletionTimestamp: { type: "string", nullable: true },
    deletionGracePeriodSeconds: { type: "integer", nullable: true },
    labels: STRING_MAP,
    annotations: STRING_MAP,
    finalizers: { type: "array", items: { type: "string" } },
    ownerReferences: { type: "array", items: { type: "object" } },
    managedFields: { type: "array", items: { type: "object" } },
  } as Record<string, OpenApiSchema>,
};

function check(value: unknown, given: Schema, path: string, found: Found): void {
  const { problems } = found;
  if (problems.length >= MAX_PROBLEMS) return;
  const schema = found.bounds ? given : shapeOf(given);
  const at = path || "the object";
  const fail = (problem: string) => problems.push(`${at}: ${problem}`);
  if (value === null) {
    if (!schema.nullable) fail("must not be null");
    return;
  }
  if (schema["x-kubernetes-int-or-string"]) {
    if (!(typeof value === "string" || Number.isInteger(value))) {
      fail(`must be an integer or a string, not ${describe(value)}`);
    }
    return;
  }
  if (schema.enum && !schema.enum.some((allowed) => allowed === value)) {
    fail(`must be one of ${schema.enum.map((e) => JSON.stringify(e)).join(", ")}`);
    return;
  }
  switch (schema.type) {
    case "string":
      if (typeof value !== "string") return void fail(`must be a string, not ${describe(value)}`);
      if (schema.maxLength !== undefined && value.length > schema.maxLength) {
        fail(`must be at most ${schema.maxLength} characters`);
      }
      if (schema.minLength !== undefined && value.length < schema.minLength) {
        fail(`must be at least ${schema.minLength} characters`);
      }
      return;
    case "integer":
    case "number":
      if (typeof value !== "number" || (schema.type === "integer" && !Number.isInteger(value))) {
        return void fail(
          `must be ${schema.type === "integer" ? "an integer" : "a number"}, ` +
            `not ${describe(value)}`,
        );
      }
      if (schema.minimum !== undefined && value < schema.minimum) {
        fail(`must be at least ${schema.minimum}`);
      }
      if (schema.maximum !== undefined && value > schema.maximum) {
        fail(`must be at most ${schema.maximum}`);
      }
      return;
    case "boolean":
      if (typeof value !== "boolean") fail(`must be true or false, not ${describe(value)}`);
      return;
    case "array":
      if (!Array.isArray(value)) return void fail(`must be a list, not ${describe(value)}`);
      if (schema.maxItems !== undefined && value.length > schema.maxItems) {
        return void fail(`must have at most ${schema.maxItems} items`);
      }
      if (schema.minItems !== undefined && value.length < schema.minItems) {
        fail(`must have at least ${schema.minItems} items`);
      }
      if (schema.items) {
        for (let i = 0; i < value.length && problems.length < MAX_PROBLEMS; i++) {
          check(value[i], schema.items as Schema, `${path}[${i}]`, found);
        }
      }
      return;
    case "object":
      return checkObject(value, schema, path, found, fail);
    default:
      // No type: anything (the schema leaves it open).
      return;
  }
}

function checkObject(
  value: unknown,
  schema: Schema,
  path: string,
  found: Found,
  fail: (problem: string) => void,
): void {
  const { problems } = found;
  if (!isObject(value)) return void fail(`must be an object, not ${describe(value)}`);
  const keys = Object.keys(value);
  if (schema.maxProperties !== undefined && keys.length > schema.maxProperties) {
    return void fail(`must have at most ${schema.maxProperties} fields`);
  }
  if (schema.minProperties !== undefined && keys.length < schema.minProperties) {
    fail(`must have at least ${schema.minProperties} fields`);
  }
  for (const name of schema.required ?? []) {
    if (!Object.hasOwn(value, name)) problems.push(`${join(path, name)}: required`);
  }
  const properties = schema.properties;
  const additional = schema.additionalProperties;
  // An object schema that names no fields (`metadata`, say) leaves its fields open.
  const open = schema["x-kubernetes-preserve-unknown-fields"] ||
    (properties === undefined && additional === undefined) || additional === true;
  for (const key of keys) {
    if (problems.length >= MAX_PROBLEMS) return;
    const field = join(path, key);
    const known = properties && Object.hasOwn(properties, key) ? properties[key] : undefined;
    if (known) check(value[key], known as Schema, field, found);
    else if (typeof additional === "object") {
      check(value[key], additional as Schema, field, found);
    } else if (!open) problems.push(`${field}: unknown field`);
  }
}

/** `schema` without the bounds a value must keep: its type and fields only. */
function shapeOf(schema: Schema): Schema {
  const {
    enum: _enum,
    maxLength: _maxLength,
    minLength: _minLength,
    minimum: _minimum,
    maximum: _maximum,
    maxItems: _maxItems,
    minItems: _minItems,
    maxProperties: _maxProperties,
    minProperties: _minProperties,
    required: _required,
    ...shape
  } = schema;
  return shape;
}

function join(path: string, key: string): string {
  const safe = /^[A-Za-z_$][\w$.\/-]*$/.test(key) && key.length <= 100
    ? key
    : JSON.stringify(key.length > 100 ? `${key.slice(0, 100)}…` : key);
  return path ? `${path}.${safe}` : safe;
}

/** True for a JSON object: not null and not an array, so its fields may be read. */
export function isObject(value: unknown): value is Unstructured & Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** What a value is, in a word or two, without repeating it. */
export function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  switch (typeof value) {
    case "string":
      return "a string";
    case "number":
      return Number.isInteger(value) ? "an integer" : "a number";
    case "boolean":
      return "a boolean";
    case "object":
      return "an object";
    default:
      return typeof value;
  }
}
