import { expect } from "expect";
import { customResourceDefinition } from "./custom_resource_definition.ts";
import { emptyValuePolicy, entriesWithoutValue, policyResource } from "./empty_value_policy.ts";

const NOTE = {
  group: "example.dev",
  version: "v1",
  kind: "Note",
  plural: "notes",
  namespaced: true,
};

Deno.test("emptyValuePolicy: one validation per map of scalars, named by its path", () => {
  const crd = customResourceDefinition(NOTE, {
    spec: {
      type: "object",
      properties: {
        selector: { type: "object", additionalProperties: { type: "string" } },
        nested: {
          type: "object",
          properties: { limits: { type: "object", additionalProperties: { type: "integer" } } },
        },
        text: { type: "string" },
      },
    },
  });
  const [policy, binding] = emptyValuePolicy(crd);
  const spec = policy.spec as {
    matchConstraints: { resourceRules: { apiGroups: string[]; resources: string[] }[] };
    variables: { name: string; expression: string }[];
    validations: { expression: string; messageExpression: string }[];
  };
  expect(policy.metadata?.name).toBe("notes.example.dev-no-empty-values");
  expect(spec.matchConstraints.resourceRules[0]).toMatchObject({
    apiGroups: ["example.dev"],
    resources: ["notes"],
  });
  expect(spec.variables.map((v) => v.name)).toEqual(["applied", "oldApplied", "added0", "added1"]);
  expect(spec.variables[2].expression).toContain(`find('"selector":[{]`);
  // Only an apply that changed the annotation is judged, and only for entries it added.
  expect((policy.spec as { matchConditions: unknown[] }).matchConditions).toEqual([
    { name: "last-applied-changed", expression: expect.stringContaining("oldObject") },
  ]);
  expect(spec.variables[2].expression).toContain("variables.oldApplied");
  expect(spec.validations.map((v) => v.messageExpression)).toEqual([
    expect.stringMatching(/^'spec\.selector key ' \+/),
    expect.stringMatching(/^'spec\.nested\.limits key ' \+/),
  ]);
  expect(binding.spec).toEqual({ policyName: policy.metadata?.name, validationActions: ["Deny"] });
  expect([policyResource(policy)?.plural, policyResource(binding)?.plural]).toEqual([
    "validatingadmissionpolicies",
    "validatingadmissionpolicybindings",
  ]);
});

Deno.test("emptyValuePolicy: nothing for a CRD without maps", () => {
  const crd = customResourceDefinition(NOTE, {
    spec: { type: "object", properties: { text: { type: "string" } } },
  });
  expect(emptyValuePolicy(crd)).toEqual([]);
});

Deno.test("entriesWithoutValue: what the policy would refuse of an object applied anew", () => {
  const crd = customResourceDefinition(NOTE, {
    spec: {
      type: "object",
      properties: { selector: { type: "object", additionalProperties: { type: "string" } } },
    },
  });
  const note = (applied?: unknown) => ({
    metadata: {
      name: "n",
      annotations: applied === undefined
        ? undefined
        : { "kubectl.kubernetes.io/last-applied-configuration": JSON.stringify(applied) },
    },
  });
  expect(entriesWithoutValue(crd, note({ spec: { selector: { a: "x", b: null } } }))).toEqual([
    expect.stringMatching(/^spec\.selector key b has no value/),
  ]);
  expect(entriesWithoutValue(crd, note({ spec: { selector: { a: "x" } } }))).toEqual([]);
  expect(entriesWithoutValue(crd, note())).toEqual([]);
});
