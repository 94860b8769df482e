import { expect } from "expect";
import { customResourceDefinition } from "./custom_resource_definition.ts";
import { emptyValuePolicy, policyResource } from "./empty_value_policy.ts";

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
  expect(spec.variables.map((v) => v.name)).toEqual(["applied", "map0", "map1"]);
  expect(spec.variables[1].expression).toContain(`find('"selector":[{]`);
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
