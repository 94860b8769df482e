/**
 * Builds a CustomResourceDefinition for a Resource from its spec and status schemas, with the
 * parts every CRD of ours shares: one served version, the status subresource, and
 * `status.observedGeneration` (the runtime writes it, and server-side apply refuses undeclared fields),
 * maps that refuse an entry without a value, naming its key, and CEL rules that judge an update by
 * the change it makes (`change_judged_rules.ts`), so that a rule added later never strands an
 * object stored before it.
 */
import { changeJudgedSchema } from "./change_judged_rules.ts";
import type { Unstructured } from "./object.ts";
import type { Resource } from "./resource.ts";

/** A column of `kubectl get`. */
export interface PrinterColumn {
  /** The column's header. */
  name: string;
  /** How kubectl formats the value. */
  type: "string" | "integer" | "number" | "boolean" | "date";
  /** Where the value is, e.g. `.status.conditions[?(@.type=="Ready")].status`. */
  jsonPath: string;
  /** Shown by `kubectl explain` and in the column's tooltip. */
  description?: string;
  /** 1 shows it only with `-o wide`. */
  priority?: number;
}

/** What a CRD says beyond its kind: schemas, names, printer columns. */
export interface CrdOptions {
  /** The spec's OpenAPI schema (an object schema). */
  spec: Record<string, unknown>;
  /** The status's properties; `observedGeneration` is added. */
  status?: Record<string, unknown>;
  /** What `kubectl explain` says of the kind. */
  description?: string;
  /** The singular name; default the kind in lower case. */
  singular?: string;
  /** Short names for kubectl, e.g. `pt`. */
  shortNames?: string[];
  /** Categories for kubectl, e.g. `all`. */
  categories?: string[];
  /** Extra columns of `kubectl get` (Age comes last by itself). */
  columns?: PrinterColumn[];
  /** CEL rules on the whole object (they may read `self.metadata.name`). */
  validations?: { rule: string; message: string }[];
  /**
   * Whether CEL rules on objects, maps and lists judge the change an update makes (default true:
   * see `change_judged_rules.ts`), so that a rule added later never strands an object stored
   * before it. False keeps every rule as written (each is then judged on the state it sees).
   */
  judgeChanges?: boolean;
  /**
   * Older names of the version, still served with the same schema (no conversion needed), each
   * with the warning kubectl prints when it is used. The resource's own version is the one
   * stored.
   */
  deprecatedAliases?: { version: string; deprecationWarning: string }[];
}

/**
 * The CRD of `resource`, from its spec schema and status fields.
 *
 * Every map (an object schema with `additionalProperties`) refuses an entry without a value
 * (`key:` in YAML, `"key": null` in JSON) with a message naming the key: the API server would
 * otherwise drop it silently, and a selector key that vanished changes what the object means.
 * For that its values are declared `nullable` (nulls of other fields are dropped before any rule
 * runs), so a rule of yours over a map's values must let null through to this one:
 * `self.all(k, dyn(self[k]) == null || …)`.
 *
 * @example
 * ```ts
 * import { customResourceDefinition } from "ptemplate-operator/mod.ts";
 *
 * const crd = customResourceDefinition(
 *   { group: "example.ptemplate.dev", version: "v1", kind: "Note", plural: "notes", namespaced: true },
 *   {
 *     spec: { type: "object", properties: { text: { type: "string", description: "What it says." } } },
 *     status: { seen: { type: "boolean", description: "Whether the operator saw it." } },
 *   },
 * );
 * if (crd.metadata?.name !== "notes.example.ptemplate.dev") throw new Error("named plural.group");
 * ```
 */
export function customResourceDefinition(resource: Resource, options: CrdOptions): Unstructured {
  if (!resource.group) {
    throw new TypeError(`${resource.kind}: a custom resource needs an API group`);
  }
  const names: Record<string, unknown> = {
    kind: resource.kind,
    listKind: `${resource.kind}List`,
    plural: resource.plural,
    singular: options.singular ?? resource.kind.toLowerCase(),
  };
  if (options.shortNames) names.shortNames = options.shortNames;
  if (options.categories) names.categories = options.categories;
  const root: Record<string, unknown> = { type: "object" };
  if (options.description) root.description = options.description;
  root.required = ["spec"];
  if (options.validations) root["x-kubernetes-validations"] = options.validations;
  root.properties = {
    apiVersion: { type: "string" },
    kind: { type: "string" },
    metadata: { type: "object" },
    spec: refuseNullMapValues(options.spec, "spec"),
    status: {
      type: "object",
      description: "Written by the operator.",
      properties: {
        observedGeneration: {
          type: "integer",
          description: "The metadata.generation this status describes.",
        },
        ...mapValues(
          options.status ?? {},
          (field, name) => refuseNullMapValues(field as Record<string, unknown>, `status.${name}`),
        ),
      },
    },
  };
  const version: Record<string, unknown> = {
    name: resource.version,
    served: true,
    storage: true,
    subresources: { status: {} },
  };
  if (options.columns) version.additionalPrinterColumns = options.columns;
  // The rule that refuses an entry without a value stays as it is: no object can be stored with
  // one (they are dropped, or refused by it), so nothing stored can break it.
  const judged = options.judgeChanges === false
    ? root
    : changeJudgedSchema(root, (rule) => rule.rule === NO_NULL_VALUES_RULE);
  version.schema = { openAPIV3Schema: judged };
  const aliases = (options.deprecatedAliases ?? []).map((
    { version: name, deprecationWarning },
  ) => ({
    ...version,
    name,
    storage: false,
    deprecated: true,
    deprecationWarning,
  }));
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${resource.plural}.${resource.group}` },
    spec: {
      group: resource.group,
      names,
      scope: resource.namespaced ? "Namespaced" : "Cluster",
      versions: [version, ...aliases],
    },
  };
}

function mapValues<T, U>(
  record: Record<string, T>,
  f: (value: T, key: string) => U,
): Record<string, U> {
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, f(v, k)]));
}

/** `schema` with every map in it refusing null values by key (see customResourceDefinition). */
function refuseNullMapValues(
  schema: Record<string, unknown>,
  path: string,
): Record<string, unknown> {
  const out = { ...schema };
  const properties = schema.properties as Record<string, Record<string, unknown>> | undefined;
  if (properties) {
    out.properties = mapValues(properties, (p, name) => refuseNullMapValues(p, `${path}.${name}`));
  }
  if (schema.items && typeof schema.items === "object") {
    out.items = refuseNullMapValues(schema.items as Record<string, unknown>, `${path}[*]`);
  }
  const values = schema.additionalProperties;
  if (values && typeof values === "object") {
    out.additionalProperties = {
      ...refuseNullMapValues(values as Record<string, unknown>, `${path}[*]`),
      nullable: true,
    };
    out["x-kubernetes-validations"] = [
      {
        rule: NO_NULL_VALUES_RULE,
        messageExpression: `'${path} key ' + self.filter(k, dyn(self[k]) == null)[0] + ` +
          `' has no value: write one (quote an empty one: "") or remove the key; it would ` +
          `otherwise be dropped silently'`,
      },
      ...(schema["x-kubernetes-validations"] as unknown[] ?? []),
    ];
  }
  return out;
}

/** The part of OpenAPI v3 that CRD schemas use, as far as our tools read them. */
export interface OpenApiSchema {
  /** `object`, `array`, `string`, `integer`, `number` or `boolean`. */
  type?: string;
  /** What it means, shown by `kubectl explain`. */
  description?: string;
  /** The fields of an object. */
  properties?: Record<string, OpenApiSchema>;
  /** The values of a map (an object with keys of its own). */
  additionalProperties?: OpenApiSchema | boolean;
  /** The items of an array. */
  items?: OpenApiSchema;
  /** Fields that must be there. */
  required?: string[];
  /** The only values allowed. */
  enum?: unknown[];
  /** Whether `null` is a value (else it removes the field). */
  nullable?: boolean;
  /** The smallest number allowed. */
  minimum?: number;
  /** The largest number allowed. */
  maximum?: number;
  /** The fewest characters a string may have. */
  minLength?: number;
  /** The most characters a string may have. */
  maxLength?: number;
  /** The most keys a map may have. */
  maxProperties?: number;
  /** A regular expression a string must match. */
  pattern?: string;
  /** The value the API server fills in when the field is absent. */
  default?: unknown;
}

/** The version a CRD stores, and its schema. */
export function storedVersion(crd: Unstructured): { name: string; schema: OpenApiSchema } {
  const versions = (crd.spec as {
    versions: { name: string; storage: boolean; schema?: { openAPIV3Schema: OpenApiSchema } }[];
  }).versions;
  const stored = versions.find((v) => v.storage) ?? versions[0];
  return { name: stored.name, schema: stored.schema?.openAPIV3Schema ?? {} };
}

/**
 * The CEL rule that refuses a map entry without a value. A map whose values are declared
 * `nullable` with this rule never stores a null: the schema says nullable only so that the API
 * server keeps the null long enough for the rule to name its key (it drops nulls of
 * non-nullable fields silently).
 */
export const NO_NULL_VALUES_RULE = "self.all(k, dyn(self[k]) != null)";

/** Whether `schema` is a map of ours that refuses entries without a value (NO_NULL_VALUES_RULE). */
export function refusesNullValues(schema: OpenApiSchema): boolean {
  const rules = (schema as { "x-kubernetes-validations"?: { rule?: string }[] })[
    "x-kubernetes-validations"
  ];
  return rules?.some((r) => r.rule === NO_NULL_VALUES_RULE) ?? false;
}
