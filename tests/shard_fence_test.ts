/**
 * The shard fence the API server keeps (cli/manifests/shard_fence_policy.ts): as the operator's
 * pods, with pod-bound tokens, a child of a ring is written only by the holder of its shard's
 * Lease, at every boundary of the split the runtime computes (kube/shard_range.ts); what is not a
 * child, a member's Lease, another ring and callers that are not its pods pass; a shard handed over
 * moves the right to write with it; an unheld or missing shard Lease locks no one out. And a ring
 * deletes the shard Leases past its size that a larger ring's crashed replica left held, which the
 * fence would read for ever.
 */
import { expect } from "expect";
import { shardFencePolicy } from "../cli/manifests/shard_fence_policy.ts";
import {
  CONFIG_MAP,
  type KubeClient,
  type KubeObject,
  LEASE,
  NAMESPACE,
  type Unstructured,
} from "../kube/mod.ts";
import { policyResource } from "../kube/empty_value_policy.ts";
import { bucketLabel, bucketsOf, shardOfBucket } from "../kube/shard_range.ts";
import { log, PTEMPLATE_OPERATOR } from "../runtime/mod.ts";
import { ringLabelValue, shardNames, ShardRing } from "../runtime/shards/mod.ts";
import { grantClusterAdmin } from "../testing/service_account_identity.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { tryWrite } from "./fixtures/try_write.ts";

const NS = "ring-fenced";
const ACCOUNT = { name: "writer", namespace: NS };
const RING = { name: "fenced-ring", namespace: NS };
/** An uneven split: shard i holds buckets [⌊256i/3⌋, ⌊256(i+1)/3⌋). */
const COUNT = 3;
const names = shardNames(PTEMPLATE_OPERATOR.objectDomain);

let made = 0;
/** A ConfigMap as a child of the ring's bucket `bucket` (two hex digits), or of none. */
const child = (bucket?: string): Unstructured => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: {
    name: `c-${++made}`,
    namespace: NS,
    ...(bucket === undefined ? {} : { labels: { [names.bucketLabel]: bucket } }),
  },
});

await integrationTest(
  "the API server refuses a child's write by a pod that does not hold its shard's Lease",
  {},
  async (plane, step) => {
    const admin = plane.client();
    const writers = await Promise.all(
      Array.from({ length: COUNT }, async (_, i) => {
        const identity = await plane.serviceAccountIdentity(NS, ACCOUNT.name, { pod: `pod-${i}` });
        return plane.clientFor(identity.config);
      }),
    );
    const unbound = plane.clientFor((await plane.serviceAccountIdentity(NS, ACCOUNT.name)).config);
    await grantClusterAdmin(admin, `system:serviceaccount:${NS}:${ACCOUNT.name}`);
    const lease = (name: string, holder: string, ring = RING.name, count = COUNT) =>
      admin.create(LEASE, {
        metadata: {
          name,
          namespace: NS,
          labels: { [names.ringLabel]: ringLabelValue(ring) },
          annotations: { [names.countAnnotation]: String(count) },
        },
        spec: { holderIdentity: holder, leaseDurationSeconds: 15 },
      });
    // Shard i held by pod-i; members' Leases held by their own pods; another ring, of one shard,
    // held by pod-0 (it fences nothing of this ring).
    for (let i = 0; i < COUNT; i++) {
      await lease(`${RING.name}-shard-${i}`, `pod-${i}_a1b2c3`);
      await lease(`${RING.name}-member-${i}`, `pod-${i}_a1b2c3`);
    }
    await lease("other-ring-shard-0", "pod-0_d4e5f6", "other-ring", 1);
    for (const object of shardFencePolicy({ serviceAccount: ACCOUNT, ring: RING })) {
      await admin.apply(policyResource(object)!, object, { fieldManager: "test", force: true });
    }
    const setHolder = async (shard: number, holderIdentity: string) => {
      const current = await admin.get(LEASE, `${RING.name}-shard-${shard}`, { namespace: NS });
      await admin.update(LEASE, { ...current, spec: { ...current.spec, holderIdentity } });
    };
    /** Which pods may create a child of `bucket`, by index. */
    const allowed = async (bucket?: string) => {
      const answers = await Promise.all(
        writers.map((w) => tryWrite(() => w.create(CONFIG_MAP, child(bucket)))),
      );
      return answers.flatMap((answer, i) => answer === "ok" ? [i] : []);
    };
    // The first and last bucket of every shard: where CEL's arithmetic must agree with ours.
    const edges = Array.from({ length: COUNT }, (_, i) => bucketsOf(i, COUNT))
      .flatMap(([start, end]) => [start, end - 1]);

    await step(
      "at every edge of the split, only the holder of the bucket's shard writes",
      async () => {
        // The policy takes effect once the API server has loaded it.
        await eventually(async () => {
          expect(await tryWrite(() => writers[1].create(CONFIG_MAP, child("00")))).toMatch(
            new RegExp(
              `^403 .*pod pod-1 does not hold the Lease ${NS}/${RING.name}-shard-0 ` +
                `\\(pod-0_a1b2c3 does\\) of shard 0 of 3, which this object is of \\(bucket 00\\)`,
            ),
          );
        }, { timeoutMs: 30_000 });
        const seen = [];
        for (const bucket of edges) {
          seen.push({ bucket, writers: await allowed(bucketLabel(bucket)) });
        }
        expect(seen).toEqual(edges.map((bucket) => ({
          bucket,
          writers: [shardOfBucket(bucket, COUNT)],
        })));
      },
    );

    await step("updates and deletes are fenced by the child's bucket, old or new", async () => {
      const mine = await writers[2].create(CONFIG_MAP, child("ff")) as KubeObject;
      const update = (by: KubeClient, labels: Record<string, string>) => () =>
        by.update(CONFIG_MAP, { ...mine, metadata: { ...mine.metadata, labels } });
      expect(await tryWrite(update(writers[0], { [names.bucketLabel]: "ff", by: "0" })))
        .toMatch(/^403 .*shard 2 of 3/);
      // Taking the label off does not take the child out of its shard.
      expect(await tryWrite(update(writers[0], { by: "0" }))).toMatch(/^403 .*shard 2 of 3/);
      expect(
        await tryWrite(() =>
          writers[1].delete(CONFIG_MAP, mine.metadata!.name!, { namespace: NS })
        ),
      ).toMatch(/^403 .*shard 2 of 3/);
      expect(await tryWrite(update(writers[2], { [names.bucketLabel]: "ff", by: "2" }))).toBe("ok");
      expect(
        await tryWrite(() =>
          writers[2].delete(CONFIG_MAP, mine.metadata!.name!, { namespace: NS })
        ),
      ).toBe("ok");
    });

    await step("what is not a ring's child, and callers that are not its pods, pass", async () => {
      expect(await allowed()).toEqual([0, 1, 2]);
      for (const notABucket of ["zz", "0", "100", "FF"]) {
        expect({ label: notABucket, writers: await allowed(notABucket) })
          .toEqual({ label: notABucket, writers: [0, 1, 2] });
      }
      expect(await tryWrite(() => admin.create(CONFIG_MAP, child("00")))).toBe("ok");
      expect(await tryWrite(() => unbound.create(CONFIG_MAP, child("00")))).toBe("ok");
    });

    await step("a shard handed over: its new holder writes, the old one is refused", async () => {
      await setHolder(0, "pod-1_f0e1d2");
      await eventually(async () => {
        expect(await allowed("00")).toEqual([1]);
      }, { timeoutMs: 10_000 });
      // A pod whose name only begins the holder's is not it.
      await setHolder(0, "pod-12_f0e1d2");
      await eventually(async () => {
        expect(await allowed("00")).toEqual([]);
      }, { timeoutMs: 10_000 });
    });

    await step("an unheld or missing shard Lease locks no one out", async () => {
      await setHolder(0, "");
      await eventually(async () => {
        expect(await allowed("00")).toEqual([0, 1, 2]);
      }, { timeoutMs: 10_000 });
      await admin.delete(LEASE, `${RING.name}-shard-2`, { namespace: NS });
      await eventually(async () => {
        expect(await allowed("ff")).toEqual([0, 1, 2]);
      }, { timeoutMs: 10_000 });
      // The shard still held is still fenced.
      expect(await allowed(bucketLabel(bucketsOf(1, COUNT)[0]))).toEqual([1]);
    });
  },
);

await integrationTest(
  "a ring deletes the shard Leases past its size that a larger ring left held, which the fence reads",
  {},
  async (plane, step) => {
    const admin = plane.client();
    await admin.create(NAMESPACE, { metadata: { name: NS } });
    // A ring of 4 whose replica crashed holding shard 3, before a rollout to 3 shards: the fence
    // would refuse the new ring's writes to the children of buckets c0–ff for as long as it stays.
    const left = (index: number, count: number) =>
      admin.create(LEASE, {
        metadata: {
          name: `${RING.name}-shard-${index}`,
          namespace: NS,
          labels: { [names.ringLabel]: ringLabelValue(RING.name) },
          annotations: { [names.countAnnotation]: String(count) },
        },
        spec: { holderIdentity: "crashed_0a1b2c", leaseDurationSeconds: 1 },
      });
    await left(3, 4);
    await left(1, 4);
    const ring = new ShardRing({
      client: admin.urgent(),
      namespace: NS,
      name: RING.name,
      identity: "replica_3d4e5f",
      count: COUNT,
      names,
      work: { start() {}, async stop() {} },
      leaseDurationMs: 1_000,
      renewDeadlineMs: 700,
      retryPeriodMs: 200,
      log: log("shard-ring"),
    });
    const stop = new AbortController();
    const running = ring.run(stop.signal);
    try {
      await step(
        "it takes its own shards, the one of its size that was left among them",
        async () => {
          await eventually(async () => {
            const leases = (await admin.list(LEASE, { namespace: NS })).items;
            const holder = (i: number) =>
              leases.find((l) => l.metadata.name === `${RING.name}-shard-${i}`)?.spec
                ?.holderIdentity;
            expect([0, 1, 2].map(holder)).toEqual(Array(3).fill("replica_3d4e5f"));
            // Its size written over the old one's: the fence splits the buckets by the Lease's N.
            const count = (i: number) =>
              leases.find((l) => l.metadata.name === `${RING.name}-shard-${i}`)?.metadata
                .annotations?.[names.countAnnotation];
            expect([0, 1, 2].map(count)).toEqual(Array(3).fill(String(COUNT)));
          }, { timeoutMs: 30_000 });
        },
      );
      await step("the one past its size goes once unchanged for ten lease durations", async () => {
        await eventually(async () => {
          const leases = (await admin.list(LEASE, { namespace: NS })).items;
          expect(leases.map((l) => l.metadata.name)).not.toContain(`${RING.name}-shard-3`);
        }, { timeoutMs: 40_000 });
        // Its own shards' Leases stay, renewed.
        const names = (await admin.list(LEASE, { namespace: NS })).items.map((l) =>
          l.metadata.name
        );
        for (let i = 0; i < COUNT; i++) expect(names).toContain(`${RING.name}-shard-${i}`);
      });
    } finally {
      stop.abort();
      await running;
    }
  },
);
