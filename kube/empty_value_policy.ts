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
 * `"<key>":null` inside the map in the JSON kubectl wrote there.
 *
 * It needs the ValidatingAdmissionPolicy API (admissionregistration.k8s.io/v1, Kubernetes 1.30
 * and later); `ptemplate-operator install` applies it beside the CRD, and the CRD's YAML file
 * holds it too.
 */
import type { KubeObject, Unstructured } from "./object.ts";
import type { Resource } from "./resource.ts";
import {
  NO_NULL_VALUES_RULE,
  type OpenApiSchema,
  storedVersion,
} from "./custom_resource_definition.ts";

const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";

/** The maps of scalars in a schema that refuse null values: their path and their own name. */
function nullRefusingMaps(schema: OpenApiSchema, path: string): { path: string; name: string }[] {
  const found: { path: string; name: string }[] = [];
  const values = schema.additionalProperties;
  const rules = (schema as { "x-kubernetes-validations"?: { rule?: string }[] })[
    "x-kubernetes-validations"
  ];
  if (
    values && typeof values === "object" && !values.properties && !values.additionalProperties &&
    values.type !== "array" && rules?.some((r) => r.rule === NO_NULL_VALUES_RULE)
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
  const variables = [{
    name: "applied",
    expression: `has(object.metadata.annotations) && '${LAST_APPLIED}' in ` +
      `object.metadata.annotations ? object.metadata.annotations['${LAST_APPLIED}'] : ''`,
  }];
  const validations = maps.map((map, i) => {
    // kubectl writes compact JSON; `"name":{…"key":null` is an entry without a value.
    variables.push({
      name: `map${i}`,
      expression: `variables.applied.find('"${map.name}":[{][^{}]*?"[^"]*":null')`,
    });
    const found = `variables.map${i}`;
    return {
      expression: `${found} == ''`,
      messageExpression: `'${map.path} key ' + ${found}.substring(${found}.lastIndexOf('"', ` +
        `size(${found}) - 7) + 1, size(${found}) - 6) + ' has no value: write one (quote an ` +
        `empty one: "") or remove the key; kubectl apply would otherwise drop it silently'`,
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
