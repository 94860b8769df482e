/**
 * `rbac`: the RBAC the enabled plugins need, and the API server's leader fence (or with `--shards`
 * the ring's Role and its shard fence), as YAML to apply.
 */
import { defineCommand } from "../command/command.ts";
import { RBAC } from "../command/flag_table.ts";
import { leaderFencePolicy } from "../manifests/leader_fence_policy.ts";
import { rbacManifests, rbacYaml } from "../manifests/rbac_manifests.ts";
import { shardFencePolicy } from "../manifests/shard_fence_policy.ts";

/** Prints the roles and their bindings, and a fence, named after the operator. */
export const rbacCommand = defineCommand({
  summary: "print the RBAC the enabled plugins need (a ClusterRole, or Roles with --namespace) " +
    "and the leader fence (an admission policy: only the Lease's holder writes); with --shards, " +
    "the ring's Role and the shard fence (only a shard's holder writes its children)",
  flags: RBAC,
  async run(values, { catalog, operator }) {
    const plugins = (await catalog(values)).map((entry) => entry.plugin);
    console.log(rbacYaml([
      ...rbacManifests(plugins, {
        operator,
        namespaces: values.namespace,
        webhooks: values.webhooks,
        shards: values.shards,
      }),
      ...(values.shards ? shardFencePolicy({ operator }) : leaderFencePolicy({ operator })),
    ]));
    return 0;
  },
});
