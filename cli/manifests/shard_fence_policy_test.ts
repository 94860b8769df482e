import { expect } from "expect";
import { parseAllDocuments } from "yaml";
import { defineOperator } from "../../runtime/mod.ts";
import { shardFencePolicy } from "./shard_fence_policy.ts";

const read = async (path: string) =>
  parseAllDocuments(await Deno.readTextFile(new URL(`../../${path}`, import.meta.url)))
    .map((d) => d.toJSON());

Deno.test("deploy/shards installs the shard fence `rbac --shards` prints", async () => {
  expect(await read("deploy/shards/shard_fence.yaml")).toEqual(shardFencePolicy());
});

Deno.test("the shard fence is named after its operator and reads its ring's names", () => {
  const operator = defineOperator({ name: "backup-operator", domain: "acme.io", version: "0.1.0" });
  const [policy, binding] = shardFencePolicy({ operator }) as {
    kind: string;
    metadata: { name: string };
    spec: Record<string, never>;
  }[];
  expect([policy.kind, policy.metadata.name, binding.metadata.name]).toEqual([
    "ValidatingAdmissionPolicy",
    "backup-operator-shard-fence",
    "backup-operator-shard-fence",
  ]);
  const text = JSON.stringify(policy.spec);
  expect(text).toContain("system:serviceaccount:backup-operator-system:backup-operator");
  expect(text).toContain("'backup-operator.acme.io-shard-'");
  expect(text).toContain("backup-operator.acme.io/shard-bucket");
  expect(text).toContain("backup-operator.acme.io/shards");
  expect(text).not.toContain("ptemplate");
  expect(binding.spec).toEqual({
    policyName: "backup-operator-shard-fence",
    validationActions: ["Deny"],
    paramRef: {
      namespace: "backup-operator-system",
      // Every Lease of the ring, its members' too; none (no ring) locks no one out.
      selector: {
        matchLabels: { "backup-operator.acme.io/shard-ring": "backup-operator.acme.io" },
      },
      parameterNotFoundAction: "Allow",
    },
  });
});
