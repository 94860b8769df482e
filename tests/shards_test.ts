/**
 * Sharding across real operator processes (`main.ts run --shards 3`, each replica its own
 * ServiceAccount, so the audit log says who wrote what): the replicas converge, every object is
 * written by one replica at a time (from the audit log), a SIGKILLed replica's shards are taken
 * over, a SIGTERMed one hands over at once, a new replica takes its share; with the API server's
 * ShardedListAndWatch gate on (server-side selection) and off (client-side filtering).
 *
 * 300 Ptemplates with the gate on (the count; the file takes about 70 s on two busy
 * cores), 90 with it off; there, a replica started with another number of shards stops itself,
 * not the ring, a rollout to that number replaces the ring, and two sizes with no ring at work
 * stay a dispute until one goes.
 */
import { expect } from "expect";
import { KMM_MODULE_CRD_FILE, MODULE } from "../crds/kmm_module.ts";
import { PTEMPLATE } from "../crds/ptemplate.ts";
import { CLUSTER_ROLE_BINDING, DAEMON_SET, LEASE, NAMESPACE } from "../kube/kinds.ts";
import type { KubeClient } from "../kube/client.ts";
import type { Unstructured } from "../kube/object.ts";
import { type AuditEvent, WRITE_VERBS } from "../testing/audit_log.ts";
import type { ControlPlane } from "../testing/control_plane.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest, type Step } from "../testing/integration_test_case.ts";
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

/** One replica: a real operator process under a ServiceAccount of its own. */
interface Replica {
  name: string;
  username: string;
  run: OperatorRun;
  metricsPort: number;
  probesPort: number;
}

async function startReplica(
  plane: ControlPlane,
  name: string,
  shards = SHARDS,
): Promise<Replica> {
  const sa = await plane.serviceAccountIdentity(RING_NS, name);
  await plane.client().create(CLUSTER_ROLE_BINDING, {
    metadata: { name: `ring-${name}` },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
    subjects: [{ kind: "ServiceAccount", name, namespace: RING_NS }],
  });
  const run = OperatorRun.start([
    "run",
    `--kubeconfig=${sa.kubeconfigPath}`,
    `--shards=${shards}`,
    "--leader-elect",
    `--leader-election-namespace=${RING_NS}`,
    `--leader-election-id=${RING}`,
    "--metrics-bind-address=127.0.0.1:0",
    "--health-probe-bind-address=127.0.0.1:0",
  ]);
  return {
    name,
    username: sa.username,
    run,
    metricsPort: await run.port("metrics"),
    probesPort: await run.port("probes"),
  };
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
  const ours = new Map(replicas.map((r) => [r.username, r.name]));
  const writes = (await plane.auditEvents()).filter((e: AuditEvent) =>
    WRITE_VERBS.has(e.verb) && ours.has(e.user.username) && e.objectRef?.name &&
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
      const who = ours.get(e.user.username)!;
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
          e.user.username === odd.username && WRITE_VERBS.has(e.verb) &&
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
