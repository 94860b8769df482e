/**
 * The leader fence the API server keeps (cli/manifests/leader_fence_policy.ts): as the operator's
 * pods, with pod-bound tokens, only the Lease's holder writes; the Lease, what every replica
 * writes, and anyone who is not one of its pods pass; the refusal names the pod, the Lease and its
 * holder.
 */
import { expect } from "expect";
import { leaderFencePolicy } from "../cli/manifests/leader_fence_policy.ts";
import { CONFIG_MAP, type KubeClient, LEASE, SECRET } from "../kube/mod.ts";
import { policyResource } from "../kube/empty_value_policy.ts";
import { grantClusterAdmin } from "../testing/service_account_identity.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { tryWrite } from "./fixtures/try_write.ts";

const NS = "fenced";
const ACCOUNT = { name: "writer", namespace: NS };
const LEASE_REF = { name: "writer-lease", namespace: NS };

let written = 0;
const createConfigMap = (client: KubeClient) => () =>
  client.create(CONFIG_MAP, { metadata: { name: `w-${++written}`, namespace: NS } });

await integrationTest(
  "the API server refuses writes by a pod that does not hold the Lease",
  {},
  async (plane, step) => {
    const admin = plane.client();
    const [a, b] = await Promise.all(["writer-a", "writer-b"].map(async (pod) => {
      const identity = await plane.serviceAccountIdentity(NS, ACCOUNT.name, { pod });
      return plane.clientFor(identity.config);
    }));
    const unbound = plane.clientFor((await plane.serviceAccountIdentity(NS, ACCOUNT.name)).config);
    await grantClusterAdmin(admin, `system:serviceaccount:${NS}:${ACCOUNT.name}`);
    await admin.create(LEASE, {
      metadata: LEASE_REF,
      spec: { holderIdentity: "writer-a_1f2e3d4c", leaseDurationSeconds: 15 },
    });
    for (const object of leaderFencePolicy({ serviceAccount: ACCOUNT, lease: LEASE_REF })) {
      await admin.apply(policyResource(object)!, object, { fieldManager: "test", force: true });
    }
    const setHolder = async (holderIdentity: string) => {
      const lease = await admin.get(LEASE, LEASE_REF.name, { namespace: NS });
      await admin.update(LEASE, { ...lease, spec: { ...lease.spec, holderIdentity } });
    };

    await step(
      "a pod that is not the holder is refused, naming the pod, Lease and holder",
      async () => {
        // The policy takes effect once the API server has loaded it.
        await eventually(async () => {
          expect(await tryWrite(createConfigMap(b))).toMatch(
            /^403 .*pod writer-b does not hold the Lease fenced\/writer-lease \(writer-a_1f2e3d4c does\)/,
          );
        }, { timeoutMs: 30_000 });
        // Every kind of write: an update and a delete of what the holder made, too.
        expect(await tryWrite(createConfigMap(a))).toBe("ok");
        const made = await a.get(CONFIG_MAP, `w-${written}`, { namespace: NS });
        expect(await tryWrite(() => b.update(CONFIG_MAP, { ...made, data: { by: "b" } })))
          .toMatch(/^403 /);
        expect(await tryWrite(() => b.delete(CONFIG_MAP, made.metadata!.name!, { namespace: NS })))
          .toMatch(/^403 /);
      },
    );

    await step("the holder, and callers that are not its pods, write", async () => {
      expect(await tryWrite(createConfigMap(a))).toBe("ok");
      expect(await tryWrite(createConfigMap(admin))).toBe("ok");
      expect(await tryWrite(createConfigMap(unbound))).toBe("ok");
    });

    await step("every replica still renews Leases and keeps the serving certificate", async () => {
      expect(
        await tryWrite(() =>
          b.create(LEASE, { metadata: { name: "writer-b-member", namespace: NS }, spec: {} })
        ),
      ).toBe("ok");
      expect(
        await tryWrite(() =>
          b.create(SECRET, {
            metadata: { name: "ptemplate-operator-webhook-cert", namespace: NS },
            type: "kubernetes.io/tls",
            data: { "tls.crt": "", "tls.key": "" },
          })
        ),
      ).toBe("ok");
      // Not any Secret: only the one named.
      expect(
        await tryWrite(() => b.create(SECRET, { metadata: { name: "another", namespace: NS } })),
      ).toMatch(/^403 /);
    });

    await step("a new holder writes at once and the old one is refused", async () => {
      await setHolder("writer-b_9a8b7c6d");
      await eventually(async () => {
        expect(await tryWrite(createConfigMap(a))).toMatch(/^403 .*(writer-b_9a8b7c6d does)/);
      }, { timeoutMs: 10_000 });
      expect(await tryWrite(createConfigMap(b))).toBe("ok");
    });

    await step("a pod whose name only begins the holder's is refused", async () => {
      await setHolder("writer-ab_12345678");
      await eventually(async () => {
        expect(await tryWrite(createConfigMap(b))).toMatch(/^403 /);
      }, { timeoutMs: 10_000 });
      expect(await tryWrite(createConfigMap(a))).toMatch(/^403 /);
    });

    await step("an unheld or missing Lease locks no one out", async () => {
      await setHolder("");
      await eventually(async () => {
        expect(await tryWrite(createConfigMap(a))).toBe("ok");
        expect(await tryWrite(createConfigMap(b))).toBe("ok");
      }, { timeoutMs: 10_000 });
      await admin.delete(LEASE, LEASE_REF.name, { namespace: NS });
      await eventually(async () => {
        expect(await tryWrite(createConfigMap(a))).toBe("ok");
        expect(await tryWrite(createConfigMap(b))).toBe("ok");
      }, { timeoutMs: 10_000 });
    });
  },
);
