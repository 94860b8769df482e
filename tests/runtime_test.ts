/** The runtime in-process against the real control plane: cache sync, apply/prune/status, quiet resync, 410. */
import { sleep } from "../util/sleep.ts";
import { expect } from "expect";
import { KubeClient } from "../kube/client.ts";
import { CONFIG_MAP, EVENT, NAMESPACE } from "../kube/kinds.ts";
import { Manager } from "../runtime/manager/mod.ts";
import { definePlugin } from "../runtime/plugin/mod.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { TcpProxy } from "../testing/tcp_proxy.ts";
import { CONFIG_SET, CONFIG_SET_CRD, configSetPlugin } from "./fixtures/config_set.ts";

const NS = "runtime";

/** A plugin that always throws, registered beside the sample to show failures stay contained. */
const brokenPlugin = definePlugin({
  name: "always-broken",
  for: CONFIG_SET,
  reconcile() {
    throw new Error("this plugin is broken on purpose");
  },
});

await integrationTest("runtime: a plugin against the real API server", {
  // ConfigMaps bypass the watch cache, so compacting etcd expires a ConfigMap watch at once.
  apiServerFlags: ["--watch-cache-sizes=configmaps#0"],
  crds: [CONFIG_SET_CRD],
}, async (plane, step) => {
  const admin = plane.client();
  await admin.create(NAMESPACE, { metadata: { name: NS } });

  // The operator reaches the API server through a proxy the test can cut.
  const proxy = new TcpProxy({ hostname: "127.0.0.1", port: Number(new URL(plane.server).port) });
  proxy.block();
  const writes: string[] = [];
  const client = new KubeClient(
    { ...plane.adminConfig, server: `https://127.0.0.1:${proxy.port}` },
    { onResponse: ({ method, path }) => method !== "GET" && writes.push(`${method} ${path}`) },
  );
  const manager = new Manager({
    client,
    plugins: [brokenPlugin, configSetPlugin],
    metricsBind: { hostname: "127.0.0.1", port: 0 },
    healthBind: { hostname: "127.0.0.1", port: 0 },
    // Keep watches from idling out during the partition test.
    watchSilenceTimeoutMs: 60_000,
  });
  const stop = new AbortController();
  const running = manager.run(stop.signal);
  const get = async (path: string) => {
    const port = path === "/metrics" ? manager.endpoints.metricsPort : manager.endpoints.healthPort;
    const response = await fetch(`http://127.0.0.1:${port}${path}`);
    return { status: response.status, body: await response.text() };
  };
  const configMap = (name: string) =>
    admin.get(CONFIG_MAP, name, { namespace: NS }).catch((e) => e);

  try {
    await step(
      "/readyz fails until the caches have synced, /healthz is fine throughout",
      async () => {
        await eventually(() => expect(manager.endpoints.healthPort).toBeDefined());
        const before = await get("/readyz?verbose");
        expect(before.status).toBe(500);
        expect(before.body).toContain("[-]informers-synced failed: waiting for");
        expect((await get("/healthz")).body).toBe("ok");
        proxy.unblock();
        await eventually(async () =>
          expect(await get("/readyz")).toEqual({ status: 200, body: "ok" })
        );
      },
    );

    await step(
      "children are created with controller owner references; status is written once",
      async () => {
        const created = await admin.create(CONFIG_SET, {
          metadata: { name: "s1", namespace: NS },
          spec: { entries: { a: "1", b: "2" } },
        });
        const children = await eventually(async () => {
          const a = await admin.get(CONFIG_MAP, "s1-a", { namespace: NS });
          const b = await admin.get(CONFIG_MAP, "s1-b", { namespace: NS });
          return [a, b];
        });
        for (const child of children) {
          expect(child.metadata?.ownerReferences).toEqual([{
            apiVersion: "test.ptemplate.dev/v1",
            kind: "ConfigSet",
            name: "s1",
            uid: created.metadata!.uid,
            controller: true,
            blockOwnerDeletion: true,
          }]);
        }
        expect(children.map((c) => c.data?.value)).toEqual(["1", "2"]);
        const set = await eventually(async () => {
          const set = await admin.get(CONFIG_SET, "s1", { namespace: NS });
          expect(set.status).toEqual({ count: 2, observedGeneration: 1 });
          return set;
        });
        expect(set.status?.count).toBe(2);
        // Let any further reconciles (child events come back through the watch) run out.
        await sleep(1_500);
        const statusWrites = writes.filter((w) => w.endsWith("/configsets/s1/status"));
        expect(statusWrites).toHaveLength(1);
      },
    );

    await step("a hand edit of a child is reverted; a deleted child comes back", async () => {
      await admin.patch(CONFIG_MAP, "s1-a", { data: { value: "hacked" } }, { namespace: NS });
      await eventually(async () => expect((await configMap("s1-a")).data?.value).toBe("1"));
      await admin.delete(CONFIG_MAP, "s1-b", { namespace: NS });
      await eventually(async () => expect((await configMap("s1-b")).data?.value).toBe("2"));
    });

    await step("a child no longer desired is pruned; the status follows", async () => {
      await admin.patch(CONFIG_SET, "s1", { spec: { entries: { b: null } } }, { namespace: NS });
      await eventually(async () => expect((await configMap("s1-b")).code).toBe(404));
      expect((await configMap("s1-a")).data?.value).toBe("1");
      await eventually(async () => {
        const set = await admin.get(CONFIG_SET, "s1", { namespace: NS });
        expect(set.status).toEqual({ count: 1, observedGeneration: 2 });
      });
    });

    await step("a plugin that throws never stops the others", async () => {
      await admin.create(CONFIG_SET, {
        metadata: { name: "s2", namespace: NS },
        spec: { entries: { z: "26" } },
      });
      await eventually(async () => expect((await configMap("s2-z")).data?.value).toBe("26"));
      const metrics = (await get("/metrics")).body;
      expect(metrics).toMatch(
        /controller_runtime_reconcile_errors_total\{controller="always-broken"\} [1-9]/,
      );
      expect(metrics).toMatch(
        /controller_runtime_reconcile_total\{controller="config-set",result="success"\} [1-9]/,
      );
    });

    await step("after convergence a full resync makes zero write requests", async () => {
      await sleep(1_500);
      const reconciles = () => {
        const metric = manager.registry.render().match(
          /controller_runtime_reconcile_total\{controller="config-set",result="success"\} (\d+)/,
        );
        return Number(metric?.[1] ?? 0);
      };
      const before = reconciles();
      const writesBefore = writes.filter((w) => !w.includes("/events")).length;
      for (const controller of manager.controllers) {
        if (controller.name === "config-set") controller.enqueueAll();
      }
      await eventually(() => expect(reconciles()).toBeGreaterThanOrEqual(before + 2));
      await sleep(500);
      expect(writes.filter((w) => !w.includes("/events")).slice(writesBefore)).toEqual([]);
    });

    await step("/metrics has the controller-runtime names with sensible values", async () => {
      const { status, body } = await get("/metrics");
      expect(status).toBe(200);
      for (
        const line of [
          /^controller_runtime_reconcile_time_seconds_bucket\{controller="config-set",le="\+Inf"\} [1-9]/m,
          /^controller_runtime_active_workers\{controller="config-set"\} 0$/m,
          /^controller_runtime_max_concurrent_reconciles\{controller="config-set"\} 1$/m,
          /^workqueue_depth\{name="config-set",priority="edit"\} 0$/m,
          /^workqueue_depth\{name="config-set",priority="bulk"\} 0$/m,
          /^workqueue_adds_total\{name="config-set",priority="bulk"\} [1-9]/m,
          /^workqueue_retries_total\{name="always-broken"\} [1-9]/m,
          /^workqueue_queue_duration_seconds_count\{name="config-set",priority="bulk"\} [1-9]/m,
          /^workqueue_work_duration_seconds_count\{name="config-set"\} [1-9]/m,
          /^rest_client_requests_total\{code="200",method="GET",host="127\.0\.0\.1:\d+"\} [1-9]/m,
          /^# TYPE controller_runtime_reconcile_total counter$/m,
        ]
      ) expect(body).toMatch(line);
    });

    await step("Events record what the operator did", async () => {
      const events = await eventually(async () => {
        const list = await admin.list(EVENT, { namespace: NS });
        const reasons = list.items.map((e) => (e as { reason?: string }).reason);
        expect(reasons).toContain("Created");
        expect(reasons).toContain("ReconcileError");
        return list.items as {
          reason?: string;
          message?: string;
          count?: number;
          involvedObject?: { name?: string };
        }[];
      });
      // A child made again after someone deleted it is news; the first making of what a new
      // ConfigSet asked for is not (its status says so), nor one Event per child on a cold start.
      const created = events.filter((e) => e.reason === "Created").map((e) => e.message);
      expect(created.join("\n")).toContain("s1-b");
      expect(created.join("\n")).not.toContain("s1-a");
      // The broken plugin failed many times, yet its failures were aggregated into few Events.
      const failures = events.filter((e) => e.reason === "ReconcileError");
      expect(failures.length).toBeLessThanOrEqual(2);
    });

    await step(
      "etcd compacted under a partitioned watch: 410, relist, nothing missed",
      async () => {
        const informer = manager.pool.informers(CONFIG_MAP)[0];
        const listsBefore = informer.lists;
        proxy.block();
        await admin.create(CONFIG_MAP, { metadata: { name: "appeared", namespace: NS } });
        await admin.delete(CONFIG_MAP, "s2-z", { namespace: NS });
        await admin.patch(CONFIG_MAP, "s1-a", { data: { value: "changed-while-away" } }, {
          namespace: NS,
        });
        await plane.compactEtcd();
        proxy.unblock();
        const cache = manager.pool.cache(CONFIG_MAP);
        await eventually(() => expect(cache.get(NS, "appeared")).toBeDefined());
        expect(informer.lists).toBeGreaterThan(listsBefore);
        // The missed deletion and edit were noticed, and reconciled back.
        await eventually(async () => expect((await configMap("s2-z")).data?.value).toBe("26"));
        await eventually(async () => expect((await configMap("s1-a")).data?.value).toBe("1"));
      },
    );

    await step("shutdown drains and returns", async () => {
      stop.abort();
      await running;
      expect(manager.leading).toBe(false);
      const refused = await fetch(`http://127.0.0.1:${manager.endpoints.metricsPort}/metrics`)
        .catch((e) => e);
      expect(refused).toBeInstanceOf(TypeError);
    });
  } finally {
    stop.abort();
    await running.catch(() => {});
    client.close();
    await proxy.close();
  }
});
