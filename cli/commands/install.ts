/**
 * `install`: the enabled plugins' CRDs (and their admission policies) into the cluster, after
 * saying which stored objects break this version's rules (`check`): they stay writable, since
 * our rules judge changes, but should be fixed.
 */
import {
  CUSTOM_RESOURCE_DEFINITION,
  emptyValuePolicy,
  policyResource,
  preflight,
} from "../../kube/mod.ts";
import { defineCommand } from "../command/command.ts";
import { connect } from "../command/connect.ts";
import { INSTALL } from "../command/flag_table.ts";
import { crdsOf } from "../plugin_loading/plugin_catalog.ts";
import { refusalsSummary, storedRefusals } from "../refusals/stored_refusals.ts";

/** Server-side applies each CRD, waits until it is Established, then its admission policy. */
export const installCommand = defineCommand({
  summary: "install (server-side apply) the CRDs into the cluster",
  flags: INSTALL,
  async run(values, { catalog, operator }) {
    const crds = crdsOf(await catalog(values));
    const client = await connect(values, operator);
    try {
      await preflight(client);
      for (const crd of crds) {
        const name = crd.metadata!.name!;
        const found = await storedRefusals(client, crd);
        if (found.breaking) {
          for (const line of found.lines) console.log(line);
          console.log(refusalsSummary(found));
        }
        await client.apply(CUSTOM_RESOURCE_DEFINITION, crd, {
          fieldManager: operator.name,
          force: true,
        });
        for (let i = 0;; i++) {
          const current = await client.get(CUSTOM_RESOURCE_DEFINITION, name);
          const conditions = (current.status as { conditions?: { type: string; status: string }[] })
            ?.conditions;
          if (conditions?.some((c) => c.type === "Established" && c.status === "True")) break;
          if (i > 100) {
            throw new Error(`CustomResourceDefinition ${name} did not become Established`);
          }
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        console.log(`installed CustomResourceDefinition ${name}`);
        // Refuses empty map values under client-side kubectl apply (kube/empty_value_policy.ts).
        for (const policy of emptyValuePolicy(crd)) {
          await client.apply(policyResource(policy)!, policy, {
            fieldManager: operator.name,
            force: true,
          });
          console.log(`installed ${policy.kind} ${policy.metadata!.name}`);
        }
      }
    } finally {
      client.close();
    }
    return 0;
  },
});
