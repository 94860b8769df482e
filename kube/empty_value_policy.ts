/**
 * The admission policy that refuses, under client-side `kubectl apply`, a map entry written
 * without a value, naming the key; a CRD's schema cannot see it.
 *
 * Client-side `kubectl apply` never sends a key without a value: it leaves the key out of the
 * object it creates (and out of the patch it sends for an update), and keeps it, as `null`, only
 * in the `kubectl.kubernetes.io/last-applied-configuration` annotation. So the map's own rule
 * (customResourceDefinition's, for server-side apply, create and replace) never sees it, and the
 * object is stored without the key: a Ptemplate whose selector said `zone:` would select every
 * zone. CRD validation rules cannot read annotations; a ValidatingAdmissionPolicy can, and finds
 * `"<key>":null` inside the map in the JSON kubectl wrote there. Like every rule of ours it judges
 * a change (an entry without a value that the last apply did not have), never a state, so objects
 * stored before it existed stay writable and deletable.
 *
 * It needs the ValidatingAdmissionPolicy API (admissionregistration.k8s.io/v1, Kubernetes 1.30
 * and later); `ptemplate-operator install` applies it beside the CRD, and the CRD's YAML file
 * holds it too.
 */
import type { KubeObject, Unstructured } from "./object.ts";
import type { Resource } from "./resource.ts";
import {
  type OpenApiSchema,
  refusesNullValues,
  storedVersion,
} from "./custom_resource_definition.ts";

const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";

/** The maps of scalars in a schema that refuse null values: their path and their own name. */
function nullRefusingMaps(schema: OpenApiSchema, path: string): { path: string; name: string }[] {
  const found: { path: string; name: string }[] = [];
  const values = schema.additionalProperties;
  if (
    values && typeof values === "object" && !values.properties && !values.additionalProperties &&
    values.type !== "array" && refusesNullValues(schema)
  ) {
    found.push({ path, name: path.slice(path.lastIndexOf(".") + 1) });
  }
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    found.push(...nullRefusingMaps(property, `${path}.${name}`));
  }
  return found;
}

/**
 * The ValidatingAdmissionPolicy and its binding for `crd`, or nothing when its spec has no map of
 * scalars (maps of objects are left to the schema's rule).
 */
export function emptyValuePolicy(crd: Unstructured): Unstructured[] {
  const spec = crd.spec as { group: string; names: { plural: string } };
  const specSchema = storedVersion(crd).schema.properties?.spec;
  const maps = specSchema ? nullRefusingMaps(specSchema, "spec") : [];
  if (!maps.length) return [];
  const name = `${crd.metadata!.name}-no-empty-values`;
  const annotation = (object: string) =>
    `has(${object}.metadata.annotations) && '${LAST_APPLIED}' in ` +
    `${object}.metadata.annotations ? ${object}.metadata.annotations['${LAST_APPLIED}'] : ''`;
  const variables = [
    { name: "applied", expression: annotation("object") },
    { name: "oldApplied", expression: `oldObject == null ? '' : (${annotation("oldObject")})` },
  ];
  const validations = maps.map((map, i) => {
    // kubectl writes compact JSON; in `"name":{…}`, `"key":null` is an entry without a value.
    const nulls = (text: string) =>
      `${text}.find('"${map.name}":[{][^{}]*[}]').findAll('"[^"]*":null')`;
    variables.push({
      name: `added${i}`,
      expression: `${nulls("variables.applied")}.filter(e, !(e in ` +
        `${nulls("variables.oldApplied")}))`,
    });
    const added = `variables.added${i}`;
    return {
      expression: `size(${added}) == 0`,
      messageExpression: `'${map.path} key ' + ${added}[0].substring(1, size(${added}[0]) - 6) + ` +
        `' has no value: write one (quote an empty one: "") or remove the key; kubectl apply ` +
        `would otherwise drop it silently'`,
      reason: "Invalid",
    };
  });
  return [
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicy",
      metadata: { name },
      spec: {
        failurePolicy: "Fail",
        matchConstraints: {
          resourceRules: [{
            apiGroups: [spec.group],
            apiVersions: ["*"],
            operations: ["CREATE", "UPDATE"],
            resources: [spec.names.plural],
          }],
        },
        // Judges what an update changes: only a last-applied annotation that changed is read, so
        // labels, finalizers, status and the garbage collector's patches never meet the rule, and
        // an entry without a value that was already there is not held against a new apply.
        matchConditions: [{
          name: "last-applied-changed",
          expression: `request.operation == 'CREATE' || (${annotation("object")}) != ` +
            `(${annotation("oldObject")})`,
        }],
        variables,
        validations,
      },
    },
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicyBinding",
      metadata: { name },
      spec: { policyName: name, validationActions: ["Deny"] },
    },
  ];
}

const policyKind = (kind: string, plural: string): Resource<Unstructured> => ({
  group: "admissionregistration.k8s.io",
  version: "v1",
  kind,
  plural,
  namespaced: false,
});
const POLICY_KINDS = [
  policyKind("ValidatingAdmissionPolicy", "validatingadmissionpolicies"),
  policyKind("ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings"),
];

/** The resource of a policy object `emptyValuePolicy` makes, to apply or delete it with. */
export function policyResource(object: KubeObject): Resource<Unstructured> | undefined {
  return POLICY_KINDS.find((r) => r.kind === object.kind);
}

/**
 * What the policy would refuse of `object` if it were applied anew: each entry its last-applied
 * annotation holds without a value, as `path key K has no value…`. For objects stored before the
 * policy existed, which it lets through as long as an apply adds no such entry.
 */
export function entriesWithoutValue(crd: Unstructured, object: KubeObject): string[] {
  const specSchema = storedVersion(crd).schema.properties?.spec;
  const text = object.metadata?.annotations?.[LAST_APPLIED];
  if (!specSchema || !text) return [];
  let applied: unknown;
  try {
    applied = JSON.parse(text);
  } catch {
    return [];
  }
  const found: string[] = [];
  for (const map of nullRefusingMaps(specSchema, "spec")) {
    let value: unknown = applied;
    for (const field of map.path.split(".")) {
      value = typeof value === "object" && value !== null
        ? (value as Record<string, unknown>)[field]
        : undefined;
    }
    if (typeof value !== "object" || value === null) continue;
    for (const [key, entry] of Object.entries(value)) {
      if (entry === null) {
        found.push(
          `${map.path} key ${key} has no value in the last kubectl apply: write one (quote an ` +
            `empty one: "") or remove the key`,
        );
      }
    }
  }
  return found;
}
