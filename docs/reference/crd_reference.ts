/**
 * docs/reference/ptemplate.md from the Ptemplate's CRD source (crds/ptemplate.ts, with the
 * v1beta1 version the conversion webhook serves): every field with its type, default,
 * description and the rules the API server holds it to, the versions, and the columns
 * `kubectl get` prints.
 */
import { PTEMPLATE_VERSIONS_CRD } from "../../crds/ptemplate_conversion.ts";
import { V1ALPHA1_ALIASES, V1BETA1_FIELDS } from "../../crds/ptemplate.ts";
import { code, generatedHeader, prose, table } from "./markdown.ts";

/** The parts of an OpenAPI v3 schema the page reads. */
interface Schema {
  type?: string;
  description?: string;
  default?: unknown;
  required?: string[];
  properties?: Record<string, Schema>;
  additionalProperties?: Schema;
  items?: Schema;
  nullable?: boolean;
  enum?: unknown[];
  format?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  maxProperties?: number;
  pattern?: string;
  "x-kubernetes-validations"?: Rule[];
}

interface Rule {
  rule: string;
  message?: string;
  messageExpression?: string;
  fieldPath?: string;
}

interface Version {
  name: string;
  served: boolean;
  storage: boolean;
  deprecated?: boolean;
  deprecationWarning?: string;
  schema: { openAPIV3Schema: Schema };
  additionalPrinterColumns?: {
    name: string;
    type: string;
    jsonPath: string;
    description?: string;
    priority?: number;
  }[];
}

interface Crd {
  spec: {
    group: string;
    names: { kind: string; plural: string; shortNames?: string[]; categories?: string[] };
    scope: string;
    versions: Version[];
  };
}

/** What a refusal says: the message, or a message expression's literal words. */
export function ruleMessage(rule: Rule): string {
  if (rule.message) return rule.message;
  const words = [...(rule.messageExpression ?? "").matchAll(/'((?:[^'\\]|\\.)*)'/g)]
    .map((m) => m[1].replace(/\\(.)/g, "$1"));
  return words.length ? words.join("…") : `the rule ${code(rule.rule)}`;
}

/** A schema's type in words: `map of string`, `array of object`. */
function typeOf(schema: Schema): string {
  if (schema.additionalProperties) return `map of ${typeOf(schema.additionalProperties)}`;
  if (schema.type === "array" && schema.items) return `array of ${typeOf(schema.items)}`;
  return schema.format ? `${schema.type} (${schema.format})` : schema.type ?? "any";
}

/** The bounds a schema states itself (not its rules). */
function bounds(schema: Schema): string[] {
  const out: string[] = [];
  if (schema.enum) out.push(`one of ${schema.enum.map((v) => code(String(v))).join(", ")}`);
  if (schema.minimum !== undefined) out.push(`at least ${schema.minimum}`);
  if (schema.maximum !== undefined) out.push(`at most ${schema.maximum}`);
  if (schema.minLength !== undefined) out.push(`at least ${schema.minLength} characters`);
  if (schema.maxLength !== undefined) out.push(`at most ${schema.maxLength} characters`);
  if (schema.maxProperties !== undefined) out.push(`at most ${schema.maxProperties} entries`);
  if (schema.pattern) out.push(`matches ${code(schema.pattern)}`);
  return out;
}

/** One field of the schema, and what it must be. */
export interface FieldRow {
  field: string;
  type: string;
  default?: string;
  description: string;
  rules: string[];
}

/** One row per field under `schema`, depth first, each with what it must be. */
export function fieldRows(schema: Schema, path: string): FieldRow[] {
  const rows: FieldRow[] = [];
  const rules = new Map<string, string[]>();
  const note = (field: string, text: string) => rules.set(field, [...rules.get(field) ?? [], text]);
  for (const rule of schema["x-kubernetes-validations"] ?? []) {
    note(rule.fieldPath ? `${path}${rule.fieldPath}` : path, ruleMessage(rule));
  }
  if (path) {
    rows.push({
      field: path,
      type: typeOf(schema),
      default: schema.default === undefined ? undefined : JSON.stringify(schema.default),
      description: schema.description ?? "",
      rules: [...bounds(schema), ...rules.get(path) ?? []],
    });
  }
  for (const [name, child] of Object.entries(schema.properties ?? {})) {
    const childPath = path ? `${path}.${name}` : name;
    const childRows = fieldRows(child, childPath);
    if (childRows.length) {
      childRows[0].rules.unshift(
        ...(schema.required?.includes(name) ? ["required"] : []),
        ...rules.get(childPath) ?? [],
      );
    }
    rows.push(...childRows);
  }
  const values = schema.additionalProperties;
  if (values) {
    const valueRows = fieldRows(values, `${path}.*`);
    if (values.nullable && valueRows.length) {
      valueRows[0].rules.push("a key without a value is refused, naming the key");
    }
    rows.push(...valueRows);
  }
  if (schema.items?.properties) rows.push(...fieldRows(schema.items, `${path}[]`).slice(1));
  return rows;
}

/** Fields as a list: each with its type and default, its description, and its rules below it. */
function fieldList(rows: FieldRow[]): string {
  return rows.map((row) => {
    const head = `- ${code(row.field)} (${row.type}${
      row.default === undefined ? "" : `, default ${code(row.default)}`
    })${row.description ? `: ${prose(row.description)}` : ""}`;
    return head + row.rules.map((rule) => `\n  - ${prose(rule)}`).join("");
  }).join("\n") + "\n";
}

/** Fields as a table, for those with few rules (the status). */
function fieldTable(rows: FieldRow[]): string {
  return table(
    ["field", "type", "description", "rules"],
    rows.map((row) => [code(row.field), row.type, prose(row.description), row.rules.join("; ")]),
  );
}

/** The page. */
export function ptemplatePage(crd: Crd = PTEMPLATE_VERSIONS_CRD as unknown as Crd): string {
  const { group, names, scope, versions } = crd.spec;
  const stored = versions.find((v) => v.storage)!;
  const root = stored.schema.openAPIV3Schema;
  const versionRows = versions.map((v) => [
    code(`${group}/${v.name}`),
    v.storage ? "stored" : "served",
    v.deprecated ? `deprecated: ${v.deprecationWarning ?? ""}` : "",
  ]);
  const objectRules = (root["x-kubernetes-validations"] ?? [])
    .map((r) => `- ${prose(ruleMessage(r))}`);
  const spec = fieldRows(
    { properties: { spec: root.properties!.spec }, required: root.required },
    "",
  );
  const status = fieldRows(root.properties!.status, "status");
  const columns = (stored.additionalPrinterColumns ?? []).map((c) => [
    c.name,
    code(c.jsonPath),
    c.priority ? "`-o wide` only" : "",
    prose(c.description ?? ""),
  ]);
  const renamed = Object.entries(V1BETA1_FIELDS).map(([alpha, beta]) => [
    code(`spec.${alpha}`),
    code(`spec.${beta}`),
    Object.entries(V1ALPHA1_ALIASES).filter(([, of]) => of === alpha)
      .map(([alias]) => code(`spec.${alias}`)).join(", "),
  ]);
  return `${generatedHeader(`${names.kind} (${group})`, "crds/ptemplate.ts, the CRD's source")}
\`${names.kind}\` is ${
    scope === "Namespaced" ? "namespaced" : "cluster-scoped"
  }: \`kubectl get ${names.plural}\`, or \`${
    (names.shortNames ?? []).join("`, `")
  }\`. The API server checks every rule below and
refuses a write that breaks one, naming the field; rules judge a change, so an object stored before a
rule existed can still be edited as long as the edit does not make it worse
([upgrading](../guides/upgrading.md)). What each condition means is in
[conditions and events](../guides/conditions_and_events.md).

${table(["version", "", "note"], versionRows)}
## Fields of ${stored.name}

${fieldList(spec)}
The whole object:

${objectRules.join("\n")}

## Status

Written by the operator, never by you.

${fieldTable(status)}
## Columns of \`kubectl get ${names.plural}\`

${table(["column", "from", "shown", "description"], columns)}
## v1beta1

The same fields, one spelling each, camelCase; served beside ${stored.name} through the conversion
webhook (deploy/webhooks/), which keeps an object's older spelling through a round trip.

${table([stored.name, "v1beta1", `older ${stored.name} spelling`], renamed)}`;
}
