import { expect } from "expect";
import { parseAllDocuments } from "yaml";
import { defineOperator } from "../../runtime/mod.ts";
import { leaderFencePolicy } from "./leader_fence_policy.ts";

const read = async (path: string) =>
  parseAllDocuments(await Deno.readTextFile(new URL(`../../${path}`, import.meta.url)))
    .map((d) => d.toJSON());

Deno.test("deploy/ installs the leader fence `rbac` prints", async () => {
  expect(await read("deploy/leader_fence/leader_fence.yaml")).toEqual(leaderFencePolicy());
});

Deno.test("the leader fence is named after its operator and fences only its pods", () => {
  const operator = defineOperator({ name: "backup-operator", domain: "acme.io", version: "0.1.0" });
  const [policy, binding] = leaderFencePolicy({ operator }) as {
    kind: string;
    metadata: { name: string };
    spec: Record<string, never>;
  }[];
  expect([policy.kind, policy.metadata.name, binding.metadata.name]).toEqual([
    "ValidatingAdmissionPolicy",
    "backup-operator-leader-fence",
    "backup-operator-leader-fence",
  ]);
  const text = JSON.stringify(policy.spec);
  expect(text).toContain("system:serviceaccount:backup-operator-system:backup-operator");
  expect(text).toContain("backup-operator-webhook-cert");
  expect(text).not.toContain("ptemplate");
  expect(binding.spec).toEqual({
    policyName: "backup-operator-leader-fence",
    validationActions: ["Deny"],
    paramRef: {
      name: "backup-operator.acme.io",
      namespace: "backup-operator-system",
      // An operator run with another Lease, or none, is never locked out.
      parameterNotFoundAction: "Allow",
    },
  });
});
