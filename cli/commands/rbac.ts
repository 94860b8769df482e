/** `rbac`: the RBAC the enabled plugins need, as YAML to apply. */
import { defineCommand } from "../command.ts";
import { RBAC } from "../flag_table.ts";
import { rbacManifests, rbacYaml } from "../rbac_manifests.ts";

/** Prints the roles and their bindings, named after the operator. */
export const rbacCommand = defineCommand({
  summary: "print the RBAC the enabled plugins need (a ClusterRole, or Roles with --namespace)",
  flags: RBAC,
  async run(values, { catalog, operator }) {
    const plugins = (await catalog(values)).map((entry) => entry.plugin);
    console.log(rbacYaml(rbacManifests(plugins, {
      operator,
      namespaces: values.namespace,
      webhooks: values.webhooks,
    })));
    return 0;
  },
});
