/**
 * Sharding across real operator processes (`main.ts run --shards 3`, each replica its own
 * ServiceAccount, so the audit log says who wrote what): the replicas converge, every object is
 * written by one replica at a time (from the audit log), a SIGKILLed replica's shards are taken
 * over, a SIGTERMed one hands over at once, a new replica takes its share; with the API server's
 * ShardedListAndWatch gate on (server-side selection) and off (client-side filtering); and as the
 * Deployment's pods (one account, pod-bound tokens) under the shard fence (deploy/shards), which
 * refuses a pod's write to a shard it does not hold and none of the ring's own.
 *
 * 300 Ptemplates with the gate on (the count; the file takes about 70 s on two busy
 * cores), 90 with it off; there, a replica started with another number of shards stops itself,
 * not the ring, a rollout to that number replaces the ring, and two sizes with no ring at work
 * stay a dispute until one goes.
 */
import { expect } from "expect";
import { shardFencePolicy } from "../cli/manifests/shard_fence_policy.ts";
import { KMM_MODULE_CRD_FILE, MODULE } from "../crds/kmm_module.ts";
import { PTEMPLATE } from "../crds/ptemplate.ts";
import { CLUSTER_ROLE_BINDING, DAEMON_SET, LEASE, NAMESPACE } from "../kube/kinds.ts";
import type { KubeClient } from "../kube/client.ts";
import type { Unstructured } from "../kube/object.ts";
import { policyResource } from "../kube/empty_value_policy.ts";
import { shardOf } from "../kube/shard_range.ts";
import { type AuditEvent, WRITE_VERBS } from "../testing/audit_log.ts";
import type { ControlPlane } from "../testing/control_plane.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest, type Step } from "../testing/integration_test_case.ts";
import { sleep } from "../util/sleep.ts";
import { OperatorRun } from "./fixtures/operator_command.ts";

const PTEMPLATE_CRD_FILE = new URL("../crds/ptemplates.pt.example.com.yaml", import.meta.url);
const NS = "work";
const RING_NS = "ring";
const RING = "pt-ring";
const SHARDS = 3;
/** The operator's object domain, under which a ring names its labels and annotations. */
const DOMAIN = "operator.ptemplate.dev";
/** The runtime's default lease duration: what a release must beat. */
const LEASE_MS = 15_000;
/** Longer than the lease, so that the others surely take a frozen replica's shards meanwhile. */
const FREEZE_MS = 20_000;
const at = (event: AuditEvent) => Date.parse(event.requestReceivedTimestamp);

/** One replica: a real operator process under a ServiceAccount of its own, or as a pod. */
interface Replica {
  name: string;
  /** Who the audit log says wrote: its ServiceAccount's username, or its pod's name. */
  writer: string;
  run: OperatorRun;
  metricsPort: number;
  probesPort: number;
}

/** The pod a request came from, with a pod-bound token. */
const POD_NAME_EXTRA = "authentication.kubernetes.io/pod-name";
const writerOf = (e: AuditEvent) => e.user.extra?.[POD_NAME_EXTRA]?.[0] ?? e.user.username;

/**
 * Starts a replica as ServiceAccount `name`, or with `asPodOf`, as pod `name` of that account
 * (a pod-bound token and POD_NAME, as the Deployment's pods; the account must be granted).
 */
async function startReplica(
  plane: ControlPlane,
  name: string,
  shards = SHARDS,
  asPodOf?: string,
): Promise<Replica> {
  const sa = asPodOf
    ? await plane.serviceAccountIdentity(RING_NS, asPodOf, { pod: name })
    : await plane.serviceAccountIdentity(RING_NS, name);
  if (!asPodOf) await grant(plane, name);
  const run = OperatorRun.start([
    "run",
    `--kubeconfig=${sa.kubeconfigPath}`,
    `--shards=${shards}`,
    "--leader-elect",
    `--leader-election-namespace=${RING_NS}`,
    `--leader-election-id=${RING}`,
    "--metrics-bind-address=127.0.0.1:0",
    "--health-probe-bind-address=127.0.0.1:0",
  ], { env: asPodOf ? { POD_NAME: name } : undefined });
  return {
    name,
    writer: asPodOf ? name : sa.username,
    run,
    metricsPort: await run.port("metrics"),
    probesPort: await run.port("probes"),
  };
}

async function grant(plane: ControlPlane, account: string): Promise<void> {
  await plane.client().create(CLUSTER_ROLE_BINDING, {
    metadata: { name: `ring-${account}` },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
    subjects: [{ kind: "ServiceAccount", name: account, namespace: RING_NS }],
  });
}

/** The shards a replica says (in `/metrics`) it holds. */
async function held(replica: Replica): Promise<number[]> {
  const text = await (await fetch(`http://127.0.0.1:${replica.metricsPort}/metrics`)).text();
  return [...text.matchAll(/^shard_held\{ring="[^"]*",shard="(\d+)"\} 1$/gm)]
    .map((m) => Number(m[1])).sort();
}

async function metric(replica: Replica, pattern: RegExp): Promise<string | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${replica.metricsPort}/metrics`)).text();
  return text.match(pattern)?.[1];
}

/** Every shard held by exactly one of `replicas`, each ready and holding its share. */
async function balanced(replicas: Replica[]): Promise<Map<Replica, number[]>> {
  return await eventually(async () => {
    const holdings = new Map<Replica, number[]>();
    for (const replica of replicas) holdings.set(replica, await held(replica));
    const all = [...holdings.values()].flat().sort();
    expect(all).toEqual(Array.from({ length: SHARDS }, (_, i) => i));
    const share = Math.floor(SHARDS / replicas.length);
    for (const [replica, shards] of holdings) {
      expect({ replica: replica.name, enough: shards.length >= share }).toEqual({
        replica: replica.name,
        enough: true,
      });
      const ready = await fetch(`http://127.0.0.1:${replica.probesPort}/readyz?verbose`);
      expect({ replica: replica.name, status: ready.status, body: await ready.text() })
        .toMatchObject({ replica: replica.name, status: 200 });
    }
    return holdings;
  }, { timeoutMs: 90_000 });
}

function ptemplate(name: string, maxdev = 3): Unstructured {
  return {
    apiVersion: "pt.example.com/v1alpha1",
    kind: "Ptemplate",
    metadata: { name, namespace: NS },
    spec: {
      maxdev,
      defaultmsg: "ptemplate",
      consumerimage: "example.com/consumer:1",
      requiredDevices: 1,
      selector: { "node-role.kubernetes.io/worker": "worker" },
    },
  } as Unstructured;
}

/** Every Ptemplate has its Module and DaemonSet (with its current maxdev) and a current status. */
async function converged(admin: KubeClient, count: number): Promise<void> {
  await eventually(async () => {
    const pts = (await admin.list(PTEMPLATE, { namespace: NS })).items;
    expect(pts).toHaveLength(count);
    const modules = new Map(
      (await admin.list(MODULE, { namespace: NS })).items.map((m) => [m.metadata!.name, m]),
    );
    const daemonSets = new Set(
      (await admin.list(DAEMON_SET, { namespace: NS })).items.map((d) => d.metadata!.name),
    );
    const behind = pts.filter((pt) =>
      !daemonSets.has(`${pt.metadata.name}-consumer`) ||
      !JSON.stringify(modules.get(pt.metadata.name!)?.spec ?? "").includes(
        `max_dev=${pt.spec?.maxdev}`,
      ) ||
      pt.status?.observedGeneration !== pt.metadata.generation
    ).map((pt) => pt.metadata.name);
    expect(behind).toEqual([]);
  }, { timeoutMs: 180_000 });
}

/**
 * From the audit log: every object the replicas wrote (Leases and Events aside), its writers in
 * time order never go back to an earlier one (A A B B, never A B A): one writer at a time, and
 * a key that moved never moved back while the other was still writing. Returns how many objects
 * changed writer.
 */
async function expectOneWriterAtATime(plane: ControlPlane, replicas: Replica[]): Promise<number> {
  const ours = new Map(replicas.map((r) => [r.writer, r.name]));
  const writes = (await plane.auditEvents()).filter((e: AuditEvent) =>
    WRITE_VERBS.has(e.verb) && ours.has(writerOf(e)) && e.objectRef?.name &&
    !["leases", "events"].includes(e.objectRef.resource ?? "") &&
    (e.responseStatus?.code ?? 0) < 300
  );
  const byObject = new Map<string, AuditEvent[]>();
  for (const e of writes) {
    const { resource, namespace, name } = e.objectRef!;
    const key = `${resource}/${namespace}/${name}`;
    byObject.set(key, [...byObject.get(key) ?? [], e]);
  }
  expect(byObject.size).toBeGreaterThan(0);
  let moved = 0;
  const interleaved: string[] = [];
  for (const [key, events] of byObject) {
    events.sort((a, b) => (a.stageTimestamp ?? "").localeCompare(b.stageTimestamp ?? ""));
    const sequence: string[] = [];
    for (const e of events) {
      const who = ours.get(writerOf(e))!;
      if (sequence.at(-1) !== who) sequence.push(who);
    }
    if (new Set(sequence).size !== sequence.length) {
      interleaved.push(`${key}: ${sequence.join(" → ")}`);
    }
    if (sequence.length > 1) moved++;
  }
  expect(interleaved).toEqual([]);
  return moved;
}

/** The ring's shard Leases, holder by shard. */
async function holders(admin: KubeClient): Promise<(string | undefined)[]> {
  return await Promise.all(
    Array.from(
      { length: SHARDS },
      async (_, i) =>
        (await admin.get(LEASE, `${RING}-shard-${i}`, { namespace: RING_NS })).spec
          ?.holderIdentity ||
        undefined,
    ),
  );
}

async function setUp(plane: ControlPlane): Promise<KubeClient> {
  const admin = plane.client();
  await admin.create(NAMESPACE, { metadata: { name: NS } });
  await plane.createNodes({ name: "infra-1" });
  return admin;
}

async function createPtemplates(admin: KubeClient, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i++) await admin.create(PTEMPLATE, ptemplate(`pt-${i}`));
}

async function stopAll(replicas: Replica[]): Promise<void> {
  await Promise.all(replicas.map((r) => r.run.stop("SIGKILL")));
}

await integrationTest("shards: 3 replicas, the ShardedListAndWatch gate on", {
  kwok: true,
  audit: true,
  featureGates: { ShardedListAndWatch: true },
  crds: [PTEMPLATE_CRD_FILE, KMM_MODULE_CRD_FILE],
}, async (plane, step: Step) => {
  const admin = await setUp(plane);
  const replicas: Replica[] = [];
  /** Every replica started, the stopped ones too: the audit log's writers. */
  const everyone: Replica[] = [];
  const start = async (name: string) => {
    const replica = await startReplica(plane, name);
    everyone.push(replica);
    replicas.push(replica);
  };
  const COUNT = 300;
  try {
    await step("3 replicas share 3 shards and converge; /metrics and /readyz say so", async () => {
      for (const name of ["a", "b", "c"]) await start(name);
      const holdings = await balanced(replicas);
      for (const shards of holdings.values()) expect(shards).toHaveLength(1);
      await createPtemplates(admin, 0, COUNT);
      await converged(admin, COUNT);
      // The server honours the shard selector: the caches asked it for their shards only.
      expect(await metric(replicas[0], /^shard_server_selects\{[^}]*\} (\d)$/m)).toBe("1");
      const sizes = await Promise.all(
        replicas.map((r) =>
          metric(
            r,
            /^informer_cache_objects\{group="pt.example.com",kind="Ptemplate"[^}]*\} (\d+)$/m,
          )
        ),
      );
      // Each holds about a third of the Ptemplates in its cache, and all of them together.
      expect(sizes.reduce((sum, size) => sum + Number(size), 0)).toBe(COUNT);
      for (const size of sizes) expect(Number(size)).toBeLessThan(COUNT);
      await expectOneWriterAtATime(plane, everyone);
    });

    await step(
      "SIGKILL of a replica: its shard is taken over, all converge, one writer at a time",
      async () => {
        const [victim] = replicas.splice(2, 1);
        const shard = (await held(victim))[0];
        await victim.run.stop("SIGKILL");
        // Edits while it is gone: the new holder of its shard makes them.
        for (let i = 0; i < COUNT; i += 3) {
          await admin.patch(PTEMPLATE, `pt-${i}`, { spec: { maxdev: 4 } }, { namespace: NS });
        }
        const holdings = await balanced(replicas);
        expect([...holdings.values()].flat()).toContain(shard);
        await converged(admin, COUNT);
        await expectOneWriterAtATime(plane, everyone);
      },
    );

    await step(
      "scaling 2 → 3: the new replica takes one shard, drained first, no key by two",
      async () => {
        const before = await holders(admin);
        await start("d");
        const holdings = await balanced(replicas);
        for (const shards of holdings.values()) expect(shards).toHaveLength(1);
        const after = await holders(admin);
        // Exactly one shard moved (⌊3/3⌋), from the replica that had two.
        expect(after.filter((h, i) => h !== before[i])).toHaveLength(1);
        await createPtemplates(admin, COUNT, COUNT + 6);
        for (let i = 1; i < COUNT; i += 3) {
          await admin.patch(PTEMPLATE, `pt-${i}`, { spec: { maxdev: 5 } }, { namespace: NS });
        }
        await converged(admin, COUNT + 6);
        expect(await expectOneWriterAtATime(plane, everyone)).toBeGreaterThan(0);
      },
    );

    await step(
      "SIGTERM hands over at once: the leases are released, not left to run out",
      async () => {
        const [leaving] = replicas.splice(0, 1);
        const shards = await held(leaving);
        const before = await holders(admin);
        const status = await leaving.run.stop("SIGTERM");
        expect(status.code).toBe(0);
        const right = await holders(admin);
        // Released on the way out: nobody's now, or already another replica's.
        for (const shard of shards) expect(right[shard]).not.toBe(before[shard]);
        const started = Date.now();
        await balanced(replicas);
        // Taken at once (the watch sees the release), long before the lease could have run out.
        expect(Date.now() - started).toBeLessThan(LEASE_MS);
        for (let i = 2; i < COUNT; i += 3) {
          await admin.patch(PTEMPLATE, `pt-${i}`, { spec: { maxdev: 6 } }, { namespace: NS });
        }
        await converged(admin, COUNT + 6);
        await expectOneWriterAtATime(plane, everyone);
      },
    );
  } finally {
    await stopAll(replicas);
  }
});

await integrationTest("shards: the ShardedListAndWatch gate off (client-side filtering)", {
  kwok: true,
  audit: true,
  featureGates: { ShardedListAndWatch: false },
  crds: [PTEMPLATE_CRD_FILE, KMM_MODULE_CRD_FILE],
}, async (plane, step: Step) => {
  const admin = await setUp(plane);
  const replicas: Replica[] = [];
  const COUNT = 90;
  try {
    await step(
      "two sizes and no ring at work: a dispute, not ready, until the other size goes",
      async () => {
        // A live member of a ring of 2 (as a replica started with --shards 2 at the same moment
        // would hold), and no shard held by anyone: neither size may start cutting keys.
        await admin.create(NAMESPACE, { metadata: { name: RING_NS } });
        await admin.create(LEASE, {
          metadata: {
            name: `${RING}-member-ghost`,
            namespace: RING_NS,
            labels: { [`${DOMAIN}/shard-ring`]: RING },
            annotations: { [`${DOMAIN}/shards`]: "2" },
          },
          spec: {
            holderIdentity: "ghost",
            leaseDurationSeconds: 3600,
            renewTime: new Date().toISOString().replace("Z", "000Z"),
          },
        });
        const a = await startReplica(plane, "a");
        replicas.push(a);
        await eventually(async () => {
          const ready = await fetch(`http://127.0.0.1:${a.probesPort}/readyz?verbose`);
          const body = await ready.text();
          expect({ status: ready.status, says: body.includes("ring of 2 shards") })
            .toEqual({ status: 500, says: true });
          expect(a.run.lines.some((l) => l.msg.startsWith("refusing to work"))).toBe(true);
        }, { timeoutMs: 60_000 });
        expect(await held(a)).toEqual([]);
        const shardLeases = (await admin.list(LEASE, { namespace: RING_NS })).items
          .map((lease) => lease.metadata!.name).filter((name) => name!.includes("-shard-"));
        expect(shardLeases).toEqual([]);
        await admin.delete(LEASE, `${RING}-member-ghost`, { namespace: RING_NS });
        await balanced(replicas);
      },
    );

    await step(
      "2 replicas, then 3: converge, the caches filter by themselves, one writer at a time",
      async () => {
        replicas.push(await startReplica(plane, "b"));
        await balanced(replicas);
        await createPtemplates(admin, 0, COUNT);
        await converged(admin, COUNT);
        expect(await metric(replicas[0], /^shard_server_selects\{[^}]*\} (\d)$/m)).toBe("0");
        replicas.push(await startReplica(plane, "c"));
        const holdings = await balanced(replicas);
        for (const shards of holdings.values()) expect(shards).toHaveLength(1);
        for (let i = 0; i < COUNT; i += 2) {
          await admin.patch(PTEMPLATE, `pt-${i}`, { spec: { maxdev: 4 } }, { namespace: NS });
        }
        await converged(admin, COUNT);
        const sizes = await Promise.all(
          replicas.map((r) =>
            metric(
              r,
              /^informer_cache_objects\{group="pt.example.com",kind="Ptemplate"[^}]*\} (\d+)$/m,
            )
          ),
        );
        expect(sizes.reduce((sum, size) => sum + Number(size), 0)).toBe(COUNT);
        expect(await expectOneWriterAtATime(plane, replicas)).toBeGreaterThan(0);
      },
    );

    await step(
      "a replica started with another --shards stops itself, not the ring it joins",
      async () => {
        const before = await holders(admin);
        const odd = await startReplica(plane, "odd", 2);
        replicas.push(odd);
        const ring = replicas.slice(0, 3);
        await eventually(async () => {
          // It waits as a standby does: ready, so that a rollout to another size goes on.
          const ready = await fetch(`http://127.0.0.1:${odd.probesPort}/readyz?verbose`);
          const body = await ready.text();
          expect({ status: ready.status, says: body.includes("same --shards") })
            .toEqual({ status: 200, says: true });
          expect(await held(odd)).toEqual([]);
          // Every replica of the ring has seen it, and left it out.
          for (const replica of ring) {
            expect({
              replica: replica.name,
              saw: replica.run.lines.some((l) => l.msg.startsWith("left out of the ring")),
            }).toEqual({ replica: replica.name, saw: true });
          }
        }, { timeoutMs: 60_000 });
        for (let i = 1; i < COUNT; i += 2) {
          await admin.patch(PTEMPLATE, `pt-${i}`, { spec: { maxdev: 5 } }, { namespace: NS });
        }
        await converged(admin, COUNT);
        await balanced(ring);
        expect(await holders(admin)).toEqual(before);
        const written = (await plane.auditEvents()).filter((e) =>
          writerOf(e) === odd.writer && WRITE_VERBS.has(e.verb) &&
          e.objectRef?.resource !== "leases"
        ).map((e) => `${e.verb} ${e.objectRef?.resource}/${e.objectRef?.name}`);
        expect(written).toEqual([]);
        await expectOneWriterAtATime(plane, ring);
      },
    );

    await step(
      "a rollout to another --shards: the old replicas go one by one, then the new size works",
      async () => {
        const everyone = [...replicas];
        const odd = replicas.pop()!;
        // As a Deployment replaces its pods: the new one is ready, so the old ones go in turn,
        // handing their shards to those that stay; the new ring starts when the last has gone.
        for (let round = 0; round < 3; round++) {
          const [leaving] = replicas.splice(0, 1);
          expect((await leaving.run.stop("SIGTERM")).code).toBe(0);
          await admin.patch(PTEMPLATE, `pt-${round}`, { spec: { maxdev: 6 } }, {
            namespace: NS,
          });
          if (replicas.length) {
            await eventually(async () => {
              const shards = (await Promise.all(replicas.map(held))).flat().sort();
              expect(shards).toEqual([0, 1, 2]);
            }, { timeoutMs: 60_000 });
            expect(await held(odd)).toEqual([]);
          }
        }
        replicas.push(odd);
        await eventually(async () => {
          expect(await held(odd)).toEqual([0, 1]);
          const ready = await fetch(`http://127.0.0.1:${odd.probesPort}/readyz?verbose`);
          expect({ status: ready.status, body: await ready.text() })
            .toMatchObject({
              status: 200,
              body: expect.stringContaining("holds shard(s) 0, 1 of 2"),
            });
        }, { timeoutMs: 60_000 });
        for (let i = 0; i < COUNT; i += 5) {
          await admin.patch(PTEMPLATE, `pt-${i}`, { spec: { maxdev: 7 } }, { namespace: NS });
        }
        await converged(admin, COUNT);
        await expectOneWriterAtATime(plane, everyone);
      },
    );
  } finally {
    await stopAll(replicas);
  }
});

await integrationTest("shards: as the Deployment's pods, under the shard fence", {
  kwok: true,
  audit: true,
  featureGates: { ShardedListAndWatch: true },
  crds: [PTEMPLATE_CRD_FILE, KMM_MODULE_CRD_FILE],
}, async (plane, step: Step) => {
  const admin = await setUp(plane);
  const ACCOUNT = "ring-pods";
  await admin.create(NAMESPACE, { metadata: { name: RING_NS } });
  await grant(plane, ACCOUNT);
  for (
    const object of shardFencePolicy({
      serviceAccount: { name: ACCOUNT, namespace: RING_NS },
      ring: { name: RING, namespace: RING_NS },
    })
  ) {
    await admin.apply(policyResource(object)!, object, { fieldManager: "test", force: true });
  }
  const replicas: Replica[] = [];
  const everyone: Replica[] = [];
  const COUNT = 60;
  /** The replicas' writes the fence refused (not the test's own, made as one of their pods). */
  const refused = async () =>
    (await plane.auditEvents()).filter((e) =>
      everyone.some((r) => r.writer === writerOf(e)) && e.userAgent !== "ptemplate-testing" &&
      e.responseStatus?.code === 403 &&
      /does not hold the Lease/.test(e.responseStatus.message ?? "")
    ).length;
  try {
    await step(
      "2 pods of one account converge; a pod writing another's shard is refused",
      async () => {
        for (const name of ["pod-a", "pod-b"]) {
          const replica = await startReplica(plane, name, SHARDS, ACCOUNT);
          replicas.push(replica);
          everyone.push(replica);
        }
        const holdings = await balanced(replicas);
        await createPtemplates(admin, 0, COUNT);
        await converged(admin, COUNT);
        await expectOneWriterAtATime(plane, everyone);
        // No shard changed hands while they worked: the fence had nothing to refuse.
        expect(await refused()).toBe(0);
        // The fence is at work: pod-a, writing a child of a shard pod-b holds, is refused.
        const [a, b] = replicas;
        const ofB = new Set(holdings.get(b));
        const pt = (await admin.list(PTEMPLATE, { namespace: NS })).items
          .find((p) => ofB.has(shardOf(p.metadata.uid!, SHARDS)))!;
        const asA = plane.clientFor(
          (await plane.serviceAccountIdentity(RING_NS, ACCOUNT, { pod: a.name })).config,
        );
        const ds = await admin.get(DAEMON_SET, `${pt.metadata.name}-consumer`, { namespace: NS });
        await expect(asA.update(DAEMON_SET, ds)).rejects.toThrow(
          /^403 .*pod pod-a does not hold the Lease ring\/pt-ring-shard-\d \(pod-b_/,
        );
      },
    );

    await step("SIGTERM: the other pod takes the shards and writes them at once", async () => {
      const [leaving] = replicas.splice(0, 1);
      expect((await leaving.run.stop("SIGTERM")).code).toBe(0);
      await balanced(replicas);
      for (let i = 0; i < COUNT; i += 2) {
        await admin.patch(PTEMPLATE, `pt-${i}`, { spec: { maxdev: 6 } }, { namespace: NS });
      }
      await converged(admin, COUNT);
      await expectOneWriterAtATime(plane, everyone);
      // A new holder's first writes may meet an API server whose copy of the Lease is a moment
      // old: refused and retried, as the leader fence's (converged above).
      console.error(
        `    ${await refused()} of the ring's writes refused by the fence after the handover`,
      );
    });

    await step(
      "a frozen pod: its shards are taken over, no child write of it lands after, a stale status is put back",
      async () => {
        const pod = await startReplica(plane, "pod-c", SHARDS, ACCOUNT);
        replicas.push(pod);
        everyone.push(pod);
        await balanced(replicas);
        const [frozen, other] = replicas;
        const taken = new Set(await held(frozen));
        const shardOfPt = new Map(
          (await admin.list(PTEMPLATE, { namespace: NS })).items
            .map((p) => [p.metadata.name!, shardOf(p.metadata.uid!, SHARDS)]),
        );
        const ofTaken = (e: AuditEvent) =>
          ["modules", "daemonsets"].includes(e.objectRef?.resource ?? "") &&
          taken.has(shardOfPt.get(e.objectRef!.name!.replace(/-consumer$/, "")) ?? -1);
        const editAll = (maxdev: number) =>
          Promise.all(
            Array.from(
              { length: COUNT },
              (_, i) => admin.patch(PTEMPLATE, `pt-${i}`, { spec: { maxdev } }, { namespace: NS }),
            ),
          );
        // Frozen in the middle of a burst of its writes (at its first answer, the others on
        // their way), as a VM pause would catch it.
        const before = frozen.run.lines.length;
        await editAll(8);
        await eventually(() => {
          expect(frozen.run.lines.slice(before).some((l) => /^updated /.test(String(l.msg))))
            .toBe(true);
        }, { timeoutMs: 30_000, intervalMs: 5 });
        const frozenAt = Date.now();
        frozen.run.child.kill("SIGSTOP");
        try {
          await eventually(async () => {
            expect((await held(other)).length).toBe(SHARDS);
          }, { timeoutMs: FREEZE_MS });
          await editAll(7);
        } finally {
          await sleep(Math.max(0, frozenAt + FREEZE_MS - Date.now()));
          frozen.run.child.kill("SIGCONT");
        }
        const wokeAt = Date.now();
        await converged(admin, COUNT);
        await sleep(3_000);
        const audit = (await plane.auditEvents()).filter((e) => WRITE_VERBS.has(e.verb));
        const landed = (e: AuditEvent) => (e.responseStatus?.code ?? 0) < 300;
        const takenOver = Math.min(
          ...audit.filter((e) => writerOf(e) === other.writer && ofTaken(e) && landed(e))
            .map(at).filter((t) => t >= frozenAt),
        );
        expect(takenOver).toBeLessThan(Infinity);
        // Once awake it may rightly take a shard back: its writes count from then on.
        const back = Math.min(
          ...audit.filter((e) =>
            writerOf(e) === frozen.writer && e.objectRef?.resource === "leases" &&
            e.objectRef.name?.startsWith(`${RING}-shard-`) && landed(e) && at(e) >= wokeAt
          ).map(at),
        );
        const stale = audit.filter((e) =>
          writerOf(e) === frozen.writer && ofTaken(e) && at(e) >= takenOver && at(e) < back
        );
        console.error(
          `    the frozen pod's child writes after the takeover: ${stale.length}, ` +
            `${stale.filter((e) => e.responseStatus?.code === 403).length} refused by the fence`,
        );
        expect(stale.filter(landed).map((e) => `${e.verb} ${e.objectRef?.name}`)).toEqual([]);
        // A parent's status written late by a replica that lost its shard (the API server does
        // not fence it) is a change its holder sees: written again.
        const late = await admin.patch(
          PTEMPLATE,
          "pt-0",
          { status: { observedGeneration: 1 } },
          { namespace: NS, subresource: "status" },
        );
        expect(late.status?.observedGeneration).toBe(1);
        expect(late.metadata.generation).toBeGreaterThan(1);
        await converged(admin, COUNT);
      },
    );
  } finally {
    await stopAll(replicas);
  }
});
