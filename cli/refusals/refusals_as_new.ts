/**
 * What this version's rules would refuse of a stored object if it were written anew: its CRD's
 * schema (shape and bounds), its CEL rules (as a create meets them) and the empty-value admission
 * policy, each as `field: why`. An object stored before a rule existed keeps working, since our
 * rules judge changes, not states; this finds such objects, so that someone can fix them.
 *
 * The CEL rules are evaluated here by a CEL interpreter (`@marcbachmann/cel-js`), loaded only when
 * a check runs. A rule it cannot evaluate is reported as not checked, never as passed.
 */
import {
  asCreate,
  entriesWithoutValue,
  type KubeObject,
  type OpenApiSchema,
  type Unstructured,
} from "../../kube/mod.ts";
import { objectProblems } from "../../runtime/mod.ts";

/** A rule of `x-kubernetes-validations`, as this check reads it. */
interface Rule {
  rule: string;
  message?: string;
  messageExpression?: string;
  fieldPath?: string;
}

type Schema = OpenApiSchema & { "x-kubernetes-validations"?: Rule[] };

/** Every way `object` breaks the rules of `crd` (the version it is in, else the stored one). */
export async function refusalsAsNew(crd: Unstructured, object: KubeObject): Promise<string[]> {
  const schema = versionSchema(crd, object.apiVersion);
  // As the API server sees it: defaults filled in before any rule runs.
  object = withDefaults(object, schema) as KubeObject;
  const problems = objectProblems(object, schema);
  const cel = await interpreter();
  problems.push(...celRefusals(cel, schema as Schema, object, ""));
  problems.push(...entriesWithoutValue(crd, object));
  return problems;
}

function versionSchema(crd: Unstructured, apiVersion: string | undefined): OpenApiSchema {
  const versions = (crd.spec as {
    versions: { name: string; storage?: boolean; schema?: { openAPIV3Schema: OpenApiSchema } }[];
  }).versions;
  const wanted = apiVersion?.split("/").at(-1);
  const version = versions.find((v) => v.name === wanted) ?? versions.find((v) => v.storage) ??
    versions[0];
  return version.schema?.openAPIV3Schema ?? {};
}

type Cel = typeof import("@marcbachmann/cel-js");
let loaded: Promise<Cel> | undefined;
const interpreter = () => loaded ??= import("@marcbachmann/cel-js");

/** The CEL rules `value` breaks at `path` and below, as the API server runs them on a create. */
function celRefusals(cel: Cel, schema: Schema, value: unknown, path: string): string[] {
  if (value === undefined || value === null) return [];
  const found: string[] = [];
  for (const rule of schema["x-kubernetes-validations"] ?? []) {
    const expression = asCreate(rule.rule);
    if (expression === undefined) continue; // a transition rule: no create meets it
    const where = `${path}${rule.fieldPath ?? ""}` || "the object";
    const self = celValue(cel, value, schema);
    try {
      if (evaluate(cel, expression, schema, self) === true) continue;
      found.push(`${where}: ${message(cel, rule, schema, self)}`);
    } catch (error) {
      found.push(
        `${where}: not checked here (the rule ${JSON.stringify(rule.rule)}: ` +
          `${(error as Error).message.split("\n")[0]})`,
      );
    }
  }
  if (typeof value !== "object") return found;
  if (Array.isArray(value)) {
    if (schema.items) {
      for (const [i, item] of value.entries()) {
        found.push(...celRefusals(cel, schema.items as Schema, item, `${path}[${i}]`));
      }
    }
    return found;
  }
  for (const [key, field] of Object.entries(value)) {
    const known = schema.properties?.[key] ??
      (typeof schema.additionalProperties === "object" ? schema.additionalProperties : undefined);
    if (known) found.push(...celRefusals(cel, known as Schema, field, join(path, key)));
  }
  return found;
}

function message(cel: Cel, rule: Rule, schema: Schema, self: unknown): string {
  if (rule.messageExpression) {
    try {
      const text = evaluate(cel, rule.messageExpression, schema, self);
      if (typeof text === "string") return text;
    } catch {
      // The static message, or the rule itself, says it instead.
    }
  }
  return rule.message ?? `failed the rule ${rule.rule}`;
}

const environments = new Map<string, InstanceType<Cel["Environment"]>>();

function evaluate(cel: Cel, expression: string, schema: Schema, self: unknown): unknown {
  const type = celType(schema);
  let environment = environments.get(type);
  if (!environment) {
    environment = new cel.Environment({ enableOptionalTypes: true })
      .registerVariable("self", type);
    environments.set(type, environment);
  }
  return environment.evaluate(expression, { self });
}

function celType(schema: Schema): string {
  switch (schema.type) {
    case "string":
      return "string";
    case "integer":
      return "int";
    case "number":
      return "double";
    case "boolean":
      return "bool";
    case "array":
      return "list";
    case "object":
      return "map";
    default:
      return "dyn";
  }
}

/** `value` as CEL sees it: integers of integer fields as CEL ints (BigInt). */
function celValue(cel: Cel, value: unknown, schema: Schema | undefined): unknown {
  if (schema?.type === "integer" && typeof value === "number" && Number.isInteger(value)) {
    return BigInt(value);
  }
  if (Array.isArray(value)) return value.map((v) => celValue(cel, v, schema?.items as Schema));
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([key, field]) => {
        const known = schema?.properties?.[key] ??
          (typeof schema?.additionalProperties === "object"
            ? schema.additionalProperties
            : undefined);
        return [key, celValue(cel, field, known as Schema | undefined)];
      }),
    );
  }
  return value;
}

/** `value` with the schema's defaults for the fields it lacks, at every level. */
function withDefaults(value: unknown, schema: OpenApiSchema | undefined): unknown {
  if (!schema || typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return value.map((item) => withDefaults(item, schema.items));
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    const known = schema.properties?.[key] ??
      (typeof schema.additionalProperties === "object" ? schema.additionalProperties : undefined);
    out[key] = withDefaults(field, known);
  }
  for (const [key, property] of Object.entries(schema.properties ?? {})) {
    if (!(key in out) && property.default !== undefined) {
      out[key] = structuredClone(property.default);
    }
  }
  return out;
}

function join(path: string, key: string): string {
  return /^[A-Za-z_$][\w$-]*$/.test(key)
    ? (path ? `${path}.${key}` : key)
    : `${path}[${JSON.stringify(key)}]`;
}
