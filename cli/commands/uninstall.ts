/**
 * `uninstall`: the enabled plugins' CRDs out of the cluster, and with them every object of their
 * kinds; says what that is first, and deletes nothing that exists without --yes.
 */
import {
  CUSTOM_RESOURCE_DEFINITION,
  emptyValuePolicy,
  isApiError,
  policyResource,
  preflight,
  storedVersion,
  type Unstructured,
} from "../../kube/mod.ts";
import { defineCommand } from "../command/command.ts";
import { connect } from "../command/connect.ts";
import { UNINSTALL } from "../command/flag_table.ts";
import { UsageError } from "../flags/flags.ts";
import { crdsOf } from "../plugin_loading/plugin_catalog.ts";

/** Counts what would go, refuses without --yes when anything would, then deletes. */
export const uninstallCommand = defineCommand({
  summary: "delete the CRDs from the cluster, and with them every object of their kinds",
  flags: UNINSTALL,
  async run(values, { catalog, operator }) {
    const crds = crdsOf(await catalog(values));
    const client = await connect(values, operator);
    try {
      await preflight(client);
      const present: { name: string; kind: string; count: number }[] = [];
      for (const crd of crds) {
        const name = crd.metadata!.name!;
        let installed: Unstructured;
        try {
          installed = await client.get(CUSTOM_RESOURCE_DEFINITION, name);
        } catch (error) {
          if (!isApiError(error, 404)) throw error;
          console.log(`CustomResourceDefinition ${name} is not installed`);
          continue;
        }
        // The cluster's CRD, not ours: it may store another version (deploy/webhooks' has two).
        const spec = installed.spec as { group: string; names: { kind: string; plural: string } };
        const resource = {
          group: spec.group,
          version: storedVersion(installed).name,
          kind: spec.names.kind,
          plural: spec.names.plural,
          namespaced: (installed.spec as { scope: string }).scope === "Namespaced",
        };
        const { items } = await client.listAll(resource);
        present.push({ name, kind: spec.names.kind, count: items.length });
      }
      const objects = present.reduce((sum, p) => sum + p.count, 0);
      for (const { name, kind, count } of present) {
        console.log(
          `CustomResourceDefinition ${name}: ${count} ${kind} object(s) would be deleted`,
        );
      }
      if (objects > 0 && !values.yes) {
        throw new UsageError(
          `uninstall would delete ${objects} object(s) with their CRDs; run again with --yes ` +
            `if that is what you want`,
        );
      }
      for (const { name } of present) {
        await client.delete(CUSTOM_RESOURCE_DEFINITION, name);
        console.log(`deleted CustomResourceDefinition ${name}`);
      }
      for (const crd of crds) {
        for (const policy of emptyValuePolicy(crd).reverse()) {
          await client.delete(policyResource(policy)!, policy.metadata!.name!).catch((error) => {
            if (!isApiError(error, 404)) throw error;
          });
        }
      }
    } finally {
      client.close();
    }
    return 0;
  },
});
