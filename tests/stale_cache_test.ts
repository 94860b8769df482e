/**
 * A cache that cannot list again holds back every write decided from it, while the other kinds'
 * caches are fine: the parents' cache is kept behind (its list refused for a while, after an API
 * server restart broke every watch), a parent is deleted and children are deleted meanwhile, and
 * the operator makes nothing from the old parents until its cache has listed again; `/readyz`
 * names the cache that is behind.
 */
import { expect } from "expect";
import { isApiError } from "../kube/errors.ts";
import { CLUSTER_ROLE, CLUSTER_ROLE_BINDING, CONFIG_MAP } from "../kube/kinds.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { sleep } from "../util/sleep.ts";
import { CONFIG_SET, CONFIG_SET_CRD } from "./fixtures/config_set.ts";
import { createConfigSets } from "./fixtures/config_set_churn.ts";
import { OperatorProcess } from "./fixtures/operator_process.ts";

const NS = "stale";
/** Long enough for any write decided from the old cache to have been made. */
const HELD_MS = 6_000;

await integrationTest("a cache that cannot list again holds back the writes decided from it", {
  crds: [CONFIG_SET_CRD],
}, async (plane, step) => {
  const admin = plane.client();
  await createConfigSets(admin, NS, 2);
  // The operator's own identity: everything it needs, and listing ConfigSets in a role of its own.
  const identity = await plane.serviceAccountIdentity("stale-operator", "operator");
  const subjects = [{
    kind: "User",
    name: identity.username,
    apiGroup: "rbac.authorization.k8s.io",
  }];
  const role = (name: string, rules: unknown[]) =>
    admin.create(CLUSTER_ROLE, { metadata: { name }, rules } as never);
  const bind = (name: string) =>
    admin.create(CLUSTER_ROLE_BINDING, {
      metadata: { name },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
      subjects,
    } as never);
  await role("stale-operator", [
    { apiGroups: [""], resources: ["configmaps", "events"], verbs: ["*"] },
    { apiGroups: ["events.k8s.io"], resources: ["events"], verbs: ["*"] },
    { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["*"] },
    {
      apiGroups: [CONFIG_SET.group],
      resources: ["configsets", "configsets/status"],
      verbs: ["get", "watch", "update", "patch"],
    },
  ]);
  await bind("stale-operator");
  await role("stale-operator-list", [
    { apiGroups: [CONFIG_SET.group], resources: ["configsets"], verbs: ["list"] },
  ]);
  await bind("stale-operator-list");
  const operator = OperatorProcess.start(
    identity.kubeconfigPath,
    "stale",
    `${plane.dir}/operator-stale.log`,
  );
  const child = (name: string) => admin.get(CONFIG_MAP, name, { namespace: NS }).catch((e) => e);
  const absent = async (name: string) => expect(isApiError(await child(name), 404)).toBe(true);

  try {
    await step("it converges as its own ServiceAccount", async () => {
      await eventually(() => expect(operator.leading).toBe(true), { timeoutMs: 60_000 });
      await eventually(async () => {
        expect((await child("s0-k")).data?.value).toBe("0");
        expect((await child("s1-k")).data?.value).toBe("0");
      });
    });

    await step(
      "while the ConfigSets' cache is behind, nothing is made from it; /readyz names it",
      async () => {
        await admin.delete(CLUSTER_ROLE_BINDING, "stale-operator-list");
        // Every watch breaks; the ConfigMaps' cache lists again, the ConfigSets' cannot.
        await plane.restartApiServer();
        await eventually(async () => {
          const readyz = await operator.probe("/readyz?verbose");
          expect(readyz.status).toBe(500);
          expect(readyz.body).toMatch(
            /\[-\]informers-synced failed: .*ConfigSet behind for \d+ s \(listing failed: 403/,
          );
        }, { timeoutMs: 30_000 });
        // Meanwhile s0 is deleted and its child with it (as the garbage collector would), and
        // s1's child is deleted and s1 edited: the ConfigMaps' cache sees the children go, and
        // the old cache still holds both parents as they were.
        await admin.delete(CONFIG_SET, "s0", { namespace: NS });
        await admin.delete(CONFIG_MAP, "s0-k", { namespace: NS });
        await admin.delete(CONFIG_MAP, "s1-k", { namespace: NS });
        await admin.patch(CONFIG_SET, "s1", { spec: { entries: { k: "0", j: "1" } } }, {
          namespace: NS,
        });
        await sleep(HELD_MS);
        await absent("s0-k");
        await absent("s1-k");
        expect(operator.leading).toBe(true);
      },
    );

    await step(
      "once it lists again, the edit is made and the deleted parent stays gone",
      async () => {
        const back = Date.now();
        await bind("stale-operator-list");
        await eventually(async () => {
          expect((await child("s1-k")).data?.value).toBe("0");
          expect((await child("s1-j")).data?.value).toBe("1");
        }, { timeoutMs: 60_000 });
        console.error(`    converged ${Date.now() - back} ms after listing was allowed again`);
        await absent("s0-k");
        await eventually(async () => expect((await operator.probe("/readyz")).status).toBe(200));
      },
    );
  } finally {
    operator.kill("SIGTERM");
    await operator.status;
  }
});
