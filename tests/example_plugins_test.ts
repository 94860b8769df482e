/** The memcached and useless-machine plugins against the real control plane (no Ptemplate CRD needed). */
import { expect } from "expect";
import { KubeClient } from "../kube/client.ts";
import { DEPLOYMENT, NAMESPACE, POD } from "../kube/kinds.ts";
import { MEMCACHED, MEMCACHED_CRD, memcachedPlugin } from "../plugins/memcached/mod.ts";
import {
  createUselessMachinePlugin,
  MACHINE,
  MACHINE_CRD,
  SWITCH,
  SWITCH_CRD,
} from "../plugins/useless_machine/mod.ts";
import { Manager } from "../runtime/manager/mod.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";

const DELAY_MS = 3_000;
/** How often the test looks; flips are judged to within this. */
const POLL_MS = 100;

await integrationTest("example plugins: memcached and the useless machine", {
  controllerManager: true,
  scheduler: true,
  kwok: true,
  crds: [MEMCACHED_CRD, MACHINE_CRD, SWITCH_CRD],
}, async (plane, step) => {
  const admin = plane.client();
  await admin.create(NAMESPACE, { metadata: { name: "examples" } });
  await plane.createNodes({ name: "node-1" }, { name: "node-2" });
  const client = new KubeClient(plane.adminConfig);
  // Only these two plugins: the Ptemplate CRD is not installed, and nothing asks for it.
  const manager = new Manager({
    client,
    plugins: [memcachedPlugin, createUselessMachinePlugin({ flipDelayMs: DELAY_MS })],
  });
  const stop = new AbortController();
  const running = manager.run(stop.signal);
  const ns = { namespace: "examples" };
  const switchesOf = async (machine: string) =>
    (await admin.list(SWITCH, {
      ...ns,
      labelSelector: `machine=${machine}`,
    })).items
      .filter((s) => !s.metadata?.deletionTimestamp);
  const machine = (name: string) => admin.get(MACHINE, name, ns);

  try {
    await step(
      "memcached: size 3 → a Deployment with 3 replicas, labelled as the seed says",
      async () => {
        await admin.create(MEMCACHED, {
          metadata: { name: "cache", ...ns },
          spec: { size: 3 },
        });
        const deployment = await eventually(() => admin.get(DEPLOYMENT, "cache", ns));
        expect(deployment.spec?.replicas).toBe(3);
        expect(deployment.spec?.template.metadata?.labels).toEqual({
          app: "memcached",
          memcached_cr: "cache",
        });
        expect(deployment.metadata?.ownerReferences?.[0]).toMatchObject({
          kind: "Memcached",
          name: "cache",
          controller: true,
        });
      },
    );

    await step(
      "memcached: patch size to 5 → 5 replicas; the pods run and status.nodes lists them",
      async () => {
        await admin.patch(MEMCACHED, "cache", { spec: { size: 5 } }, ns);
        await eventually(async () => {
          expect(
            (await admin.get(DEPLOYMENT, "cache", ns)).spec?.replicas,
          ).toBe(5);
          // As long as the pods below may take: a busy machine slows the plugin's visit too.
        }, { timeoutMs: 90_000 });
        await eventually(async () => {
          const pods = (await admin.list(POD, { ...ns, labelSelector: "memcached_cr=cache" })).items
            .filter((p) => (p as { status?: { phase?: string } }).status?.phase === "Running");
          expect(pods).toHaveLength(5);
          const cache = await admin.get(MEMCACHED, "cache", ns);
          expect(cache.status?.nodes).toEqual(pods.map((p) => p.metadata!.name!).sort());
        }, { timeoutMs: 90_000, intervalMs: 500 });
      },
    );

    await step("memcached: delete → the Deployment is garbage-collected", async () => {
      await admin.delete(MEMCACHED, "cache", ns);
      await eventually(async () => {
        const gone = await admin.get(DEPLOYMENT, "cache", ns).catch((e) => e);
        expect(gone.code).toBe(404);
      }, { timeoutMs: 90_000 });
    });

    await step("useless machine: 3 switches, exactly, owned by it; positions ddd", async () => {
      await admin.create(MACHINE, {
        metadata: { name: "m1", ...ns },
        spec: { switches: 3 },
      });
      await eventually(async () => expect((await machine("m1")).status?.positions).toBe("ddd"));
      // No extra switch appears later (writes not yet in the cache are not counted twice).
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      const switches = await switchesOf("m1");
      expect(switches).toHaveLength(3);
      const uid = (await machine("m1")).metadata!.uid;
      for (const sw of switches) {
        expect(sw.metadata?.ownerReferences).toEqual([
          expect.objectContaining({ uid, controller: true }),
        ]);
        expect(sw.spec.position).toBe("down");
      }
    });

    await step(
      "a switch set up is back down after the delay and not before; positions follow",
      async () => {
        const [first] = await switchesOf("m1");
        const name = first.metadata!.name!;
        await admin.patch(SWITCH, name, { spec: { position: "up" } }, ns);
        let seenAt: number | undefined;
        let sawUp = false;
        const downAt = await eventually(async () => {
          const sw = await admin.get(SWITCH, name, ns);
          if (sw.status?.seenAt) seenAt = Date.parse(sw.status.seenAt);
          if ((await machine("m1")).status?.positions?.includes("u")) sawUp = true;
          expect(sw.spec.position).toBe("down");
          return Date.now();
        }, { timeoutMs: DELAY_MS * 4, intervalMs: POLL_MS });
        expect(sawUp).toBe(true);
        expect(seenAt).toBeDefined();
        expect(downAt - seenAt!).toBeGreaterThanOrEqual(DELAY_MS - POLL_MS);
        await eventually(async () => expect((await machine("m1")).status?.positions).toBe("ddd"));
      },
    );

    await step("with every switch up, at most one flips per machine per delay period", async () => {
      const names = (await switchesOf("m1")).map((s) => s.metadata!.name!);
      for (const name of names) await admin.patch(SWITCH, name, { spec: { position: "up" } }, ns);
      const flippedAt = new Map<string, number>();
      await eventually(async () => {
        for (const sw of await switchesOf("m1")) {
          if (sw.spec.position === "down" && !flippedAt.has(sw.metadata!.name!)) {
            flippedAt.set(sw.metadata!.name!, Date.now());
          }
        }
        expect(flippedAt.size).toBe(3);
      }, { timeoutMs: DELAY_MS * 8, intervalMs: POLL_MS });
      const times = [...flippedAt.values()].sort((a, b) => a - b);
      for (let i = 1; i < times.length; i++) {
        expect(times[i] - times[i - 1]).toBeGreaterThanOrEqual(DELAY_MS - 2 * POLL_MS);
      }
    });

    await step("scaling to 1 deletes two switches, the newest", async () => {
      const oldest = (await switchesOf("m1")).sort((a, b) =>
        (a.metadata!.creationTimestamp!).localeCompare(b.metadata!.creationTimestamp!) ||
        a.metadata!.name!.localeCompare(b.metadata!.name!)
      )[0];
      await admin.patch(MACHINE, "m1", { spec: { switches: 1 } }, ns);
      await eventually(async () => {
        const switches = await switchesOf("m1");
        expect(switches.map((s) =>
          s.metadata!.name
        )).toEqual([oldest.metadata!.name]);
        expect((await machine("m1")).status?.positions).toBe("d");
      });
    });

    await step("a relabelled switch moves to its new machine, which adopts it", async () => {
      await admin.create(MACHINE, {
        metadata: { name: "m2", ...ns },
        spec: { switches: 1 },
      });
      await eventually(async () => expect(await switchesOf("m2")).toHaveLength(1));
      const [moving] = await switchesOf("m1");
      await admin.patch(
        SWITCH,
        moving.metadata!.name!,
        { metadata: { labels: { machine: "m2" } } },
        ns,
      );
      const m2 = await machine("m2");
      await eventually(async () => {
        // m2 keeps its oldest switch (the one that moved) and adopts it; m1 makes a new one.
        const onM2 = await switchesOf("m2");
        expect(onM2.map((s) => s.metadata!.name)).toEqual([moving.metadata!.name]);
        expect(onM2[0].metadata?.ownerReferences).toEqual([
          expect.objectContaining({ uid: m2.metadata!.uid }),
        ]);
        const onM1 = await switchesOf("m1");
        expect(onM1).toHaveLength(1);
        expect(onM1[0].metadata!.name).not.toBe(moving.metadata!.name);
      });
    });

    await step("deleting a machine removes its switches, and only its own", async () => {
      const moved = (await switchesOf("m2"))[0].metadata!.name!;
      await admin.delete(MACHINE, "m1", ns);
      await eventually(async () => expect(await switchesOf("m1")).toEqual([]), {
        timeoutMs: 90_000,
      });
      expect((await switchesOf("m2")).map((s) => s.metadata!.name)).toEqual([moved]);
      await admin.delete(MACHINE, "m2", ns);
      await eventually(async () => expect(await switchesOf("m2")).toEqual([]), {
        timeoutMs: 90_000,
      });
    });
  } finally {
    stop.abort();
    await running;
    client.close();
  }
});
