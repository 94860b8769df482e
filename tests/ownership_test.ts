/**
 * Children are ours alone, against the real control plane: objects named like a child that we do
 * not control are left untouched and reported; two parents never fight over one child; a write
 * loop is stopped; the DaemonSet controller never adopts a stray pod; an old-style DaemonSet is
 * replaced once on upgrade.
 */
import { expect } from "expect";
import { KMM_MODULE_CRD_FILE, MODULE } from "../crds/kmm_module.ts";
import { PTEMPLATE, type Ptemplate } from "../crds/ptemplate.ts";
import { KubeClient } from "../kube/client.ts";
import type { KubeObject, Unstructured } from "../kube/object.ts";
import type { Resource } from "../kube/resource.ts";
import { CONFIG_MAP, DAEMON_SET, EVENT, NAMESPACE, POD } from "../kube/kinds.ts";
import { daemonSetFor, moduleFor, PTEMPLATE_PLUGINS } from "../reconcilers/mod.ts";
import { Manager } from "../runtime/manager/mod.ts";
import { type AuditEvent, WRITE_VERBS } from "../testing/audit_log.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { sleep } from "../util/sleep.ts";
import { adoptingMirrorPlugin, MIRROR, MIRROR_CRD, mirrorPlugin } from "./fixtures/mirror.ts";

const NS = "own";
const WORKER = { "node-role.kubernetes.io/worker": "worker" };
const PTEMPLATE_CRD_FILE = new URL("../crds/ptemplates.pt.example.com.yaml", import.meta.url);
/** How long a foreign object must stay untouched; the operator reconciles it many times meanwhile. */
const UNTOUCHED_MS = 10_000;
/**
 * The write-loop guard's defaults: 10 writes in 10 s, then pauses of 30 s, 60 s, …; so a loop
 * makes at most 20 requests in its first minute: twice ten writes.
 */
const LOOP_BOUND_60S = 20;

const at = (e: AuditEvent) => Date.parse(e.requestReceivedTimestamp);

function ptemplate(name: string, selector = WORKER): Ptemplate & Unstructured {
  return { metadata: { name, namespace: NS }, spec: { selector } } as Ptemplate & Unstructured;
}

await integrationTest("children are ours alone", {
  controllerManager: true,
  scheduler: true,
  kwok: true,
  audit: true,
  crds: [PTEMPLATE_CRD_FILE, KMM_MODULE_CRD_FILE, MIRROR_CRD],
}, async (plane, step) => {
  const admin = plane.client();
  await admin.create(NAMESPACE, { metadata: { name: NS } });
  await plane.createNodes({ name: "worker-1", labels: WORKER });
  const operator = { stop: async () => {} };
  const start = () => {
    const client = new KubeClient(plane.adminConfig, { userAgent: "ownership-test-operator" });
    const manager = new Manager({
      client,
      plugins: [...PTEMPLATE_PLUGINS, mirrorPlugin, adoptingMirrorPlugin],
    });
    const stop = new AbortController();
    const running = manager.run(stop.signal);
    operator.stop = async () => {
      stop.abort();
      await running;
      client.close();
    };
    return manager;
  };
  let manager = start();
  const events = async (name: string) =>
    (await admin.list(EVENT, { namespace: NS })).items
      .filter((e) => e.involvedObject.name === name);
  const getPt = (name: string) => admin.get(PTEMPLATE, name, { namespace: NS });
  const ready = async (name: string) =>
    (await getPt(name)).status?.conditions?.find((c) => c.type === "Ready");
  const writesTo = async (resource: string, name: string, from: number, to = Infinity) =>
    (await plane.auditEvents()).filter((e) =>
      e.userAgent === "ownership-test-operator" && WRITE_VERBS.has(e.verb) &&
      e.objectRef?.resource === resource && e.objectRef?.name === name &&
      at(e) >= from && at(e) <= to
    );

  /**
   * Nobody wrote them but their own controllers: the DaemonSet controller keeps writing a
   * DaemonSet's status, so "untouched" is judged by the spec's generation, the owner references
   * and the audit log, not the resourceVersion.
   */
  const expectUntouched = async (
    objects: [Resource, KubeObject][],
    owners: unknown[] | undefined,
  ) => {
    for (const [resource, before] of objects) {
      const name = before.metadata!.name!;
      const now = await admin.get(resource, name, { namespace: NS });
      expect(now.metadata?.generation).toBe(before.metadata?.generation);
      expect(now.metadata?.ownerReferences).toEqual(owners);
      expect(await writesTo(resource.plural, name, 0)).toEqual([]);
    }
  };

  // Started first, judged later: a non-idempotent plugin's child, and a child someone else keeps
  // changing back (the fighter polls it, as a second controller would watch it, until stopped).
  const clockStarted = Date.now();
  await admin.create(MIRROR, {
    metadata: { name: "clock", namespace: NS },
    spec: { target: "ticking", value: "v", clock: true },
  });
  const fightStarted = Date.now();
  await admin.create(MIRROR, {
    metadata: { name: "fought", namespace: NS },
    spec: { target: "fought", value: "ours" },
  });
  const truce = new AbortController();
  const fighter = (async () => {
    while (!truce.signal.aborted) {
      const child = await admin.get(CONFIG_MAP, "fought", { namespace: NS }).catch(() => undefined);
      if (child && child.data?.value !== "theirs") {
        await admin.patch(CONFIG_MAP, "fought", { data: { value: "theirs" } }, {
          namespace: NS,
          fieldManager: "fighter",
        }).catch(() => {});
      }
      await sleep(100);
    }
  })();

  try {
    await step("a non-idempotent plugin writes once per change, not in a loop", async () => {
      // Its own writes' echoes are no news, so nothing visits it again until something changes.
      await eventually(async () => {
        const child = await admin.get(CONFIG_MAP, "ticking", { namespace: NS });
        expect(child.data?.at).toBeDefined();
      });
      await sleep(5_000);
      const quietFrom = Date.now();
      await sleep(5_000);
      expect(await writesTo("configmaps", "ticking", quietFrom)).toEqual([]);
      // its create, and the apply after the first status (a create-only apply owns its fields
      // as applied: nothing to relabel before the second)
      expect((await writesTo("configmaps", "ticking", clockStarted)).length).toBeLessThanOrEqual(2);
    });

    await step(
      "a child someone keeps changing back is left alone for a while, and they are told why",
      async () => {
        const event = await eventually(async () => {
          const found = (await events("fought")).find((e) => e.reason === "WriteLoopDetected");
          expect(found).toBeDefined();
          return found!;
        }, { timeoutMs: 120_000 });
        const caughtAfter = Date.parse(event.firstTimestamp!) - fightStarted;
        console.error(
          `    the loop was stopped ${caughtAfter} ms after it began: ${event.message}`,
        );
        expect(event.message).toMatch(/ConfigMap fought was written \d+ times in a row/);
        expect(event.message).toContain("it keeps changing at data.value");
        expect(manager.registry.render()).toMatch(
          /^controller_write_loops_detected_total\{controller="mirror",kind="ConfigMap"\} [1-9]/m,
        );
        // The other plugins are not held up by it.
        await admin.create(MIRROR, {
          metadata: { name: "calm", namespace: NS },
          spec: { target: "calm", value: "still" },
        });
        await eventually(async () =>
          expect((await admin.get(CONFIG_MAP, "calm", { namespace: NS })).data)
            .toEqual({ value: "still" })
        );
      },
    );

    await step("a Module and a DaemonSet owned by nobody are left alone and reported", async () => {
      const model = { ...ptemplate("taken"), metadata: { name: "taken", namespace: NS, uid: "u" } };
      const module = await admin.create(MODULE, moduleFor(model));
      const ds = await admin.create(DAEMON_SET, daemonSetFor(model));
      await admin.create(PTEMPLATE, ptemplate("taken"));
      await eventually(async () => {
        expect(await ready("taken")).toMatchObject({ status: "False", reason: "ChildNameTaken" });
        const reasons = (await events("taken")).map((e) => `${e.reason}: ${e.message}`);
        expect(reasons).toContainEqual(
          expect.stringMatching(
            /^ChildNameTaken: Module own\/taken already exists and is not ours/,
          ),
        );
        expect(reasons).toContainEqual(
          expect.stringMatching(/^ChildNameTaken: DaemonSet own\/taken-consumer already exists/),
        );
      });
      expect((await ready("taken"))?.message).toMatch(/delete or rename it/);
      await sleep(UNTOUCHED_MS);
      await expectUntouched([[MODULE, module], [DAEMON_SET, ds]], undefined);
      // Once the user deletes them, the operator makes its own.
      const pt = await getPt("taken");
      await admin.delete(MODULE, "taken", { namespace: NS });
      await admin.delete(DAEMON_SET, "taken-consumer", { namespace: NS });
      await eventually(async () => {
        for (
          const [resource, name] of [[MODULE, "taken"], [DAEMON_SET, "taken-consumer"]] as const
        ) {
          const child = await admin.get(resource, name, { namespace: NS });
          expect(child.metadata?.ownerReferences?.[0]).toMatchObject({
            uid: pt.metadata!.uid,
            controller: true,
          });
        }
      });
    });

    await step("children controlled by another object stay its own, even after we go", async () => {
      const boss = await admin.create(CONFIG_MAP, {
        metadata: { name: "boss", namespace: NS },
      });
      const theirs = {
        apiVersion: "v1",
        kind: "ConfigMap",
        name: "boss",
        uid: boss.metadata!.uid!,
        controller: true,
      };
      const model = { ...ptemplate("other"), metadata: { name: "other", namespace: NS, uid: "u" } };
      const owned = <T extends KubeObject>(object: T): T => ({
        ...object,
        metadata: { ...object.metadata, ownerReferences: [theirs] },
      });
      const module = await admin.create(MODULE, owned(moduleFor(model)));
      const ds = await admin.create(DAEMON_SET, owned(daemonSetFor(model)));
      await admin.create(PTEMPLATE, ptemplate("other"));
      await eventually(async () => {
        expect(await ready("other")).toMatchObject({
          status: "False",
          reason: "ChildOwnedElsewhere",
        });
        expect((await ready("other"))?.message).toMatch(/is controlled by ConfigMap boss/);
        expect((await events("other")).map((e) => e.reason)).toContain("ChildOwnedElsewhere");
      });
      await sleep(UNTOUCHED_MS);
      await admin.delete(PTEMPLATE, "other", { namespace: NS });
      await eventually(async () => expect((await getPt("other").catch((e) => e)).code).toBe(404));
      await sleep(3_000); // time for the garbage collector to act, if it wrongly would
      await expectUntouched([[MODULE, module], [DAEMON_SET, ds]], [theirs]);
    });

    await step("two objects that want one child: one controls it, the other says so", async () => {
      const since = Date.now();
      await admin.create(MIRROR, {
        metadata: { name: "first", namespace: NS },
        spec: { target: "shared", value: "first" },
      });
      await admin.create(MIRROR, {
        metadata: { name: "second", namespace: NS },
        spec: { target: "shared", value: "second" },
      });
      const winner = await eventually(async () => {
        const cm = await admin.get(CONFIG_MAP, "shared", {
          namespace: NS,
        });
        return cm.metadata!.ownerReferences![0].name;
      });
      const loser = winner === "first" ? "second" : "first";
      await eventually(async () => {
        const reported = (await events(loser)).find((e) => e.reason === "ChildOwnedElsewhere");
        expect(reported?.message).toContain(`is controlled by Mirror ${winner}`);
      });
      await sleep(UNTOUCHED_MS);
      const cm = await admin.get(CONFIG_MAP, "shared", { namespace: NS });
      expect(cm.data).toEqual({ value: winner });
      expect(cm.metadata!.ownerReferences).toHaveLength(1);
      const writes = await writesTo("configmaps", "shared", since);
      console.error(`    ${writes.length} writes to the shared child`);
      expect(writes.length).toBeLessThanOrEqual(3);
    });

    await step("an object nobody controls is adopted only by a plugin that opts in", async () => {
      await admin.create(CONFIG_MAP, {
        metadata: { name: "orphan", namespace: NS },
        data: { value: "old" },
      });
      const adopter = await admin.create(MIRROR, {
        metadata: { name: "adopter", namespace: NS },
        spec: { target: "orphan", value: "new", adopt: true },
      });
      await eventually(async () => {
        const cm = await admin.get(CONFIG_MAP, "orphan", {
          namespace: NS,
        });
        expect(cm.data).toEqual({ value: "new" });
        expect(cm.metadata!.ownerReferences).toEqual([expect.objectContaining({
          uid: adopter.metadata!.uid,
          controller: true,
        })]);
        expect((await events("adopter")).map((e) => e.message)).toContain(
          "Adopted ConfigMap orphan",
        );
      });
    });

    await step("a bare pod labelled app=<name> is neither adopted nor counted", async () => {
      await admin.create(POD, {
        metadata: { name: "stray", namespace: NS, labels: { app: "pods" } },
        spec: { containers: [{ name: "c", image: "registry.example/stray:1" }] },
      });
      await admin.create(PTEMPLATE, ptemplate("pods"));
      const pt = await eventually(async () => {
        const pt = await getPt("pods");
        expect(pt.status?.consumers).toHaveLength(1);
        expect(pt.status?.conditions?.find((c) => c.type === "ConsumersReady")?.status).toBe(
          "True",
        );
        return pt;
      }, { timeoutMs: 60_000 });
      expect(pt.status!.consumers![0]).toMatch(/^pods-consumer-/);
      await sleep(3_000);
      const stray = await admin.get(POD, "stray", { namespace: NS });
      expect(stray.metadata?.ownerReferences).toBeUndefined();
      expect(stray.metadata?.deletionTimestamp).toBeUndefined();
      expect((await getPt("pods")).status?.consumers).not.toContain("stray");
    });

    await step(`the fought child got at most ${LOOP_BOUND_60S} writes in a minute`, async () => {
      await sleep(Math.max(0, fightStarted + 61_000 - Date.now()));
      truce.abort();
      await fighter;
      const writes = await writesTo("configmaps", "fought", fightStarted, fightStarted + 60_000);
      console.error(`    ${writes.length} writes to the fought child in its first minute`);
      expect(writes.length).toBeGreaterThan(1);
      expect(writes.length).toBeLessThanOrEqual(LOOP_BOUND_60S);
    });
    await step("a DaemonSet with the old selector is replaced once on upgrade", async () => {
      await operator.stop();
      const pt = await admin.create(PTEMPLATE, ptemplate("upgrade"));
      // What 0.1 made: selected by `app` alone.
      const old = daemonSetFor(pt);
      old.spec!.selector = { matchLabels: { app: "upgrade" } };
      old.spec!.template.metadata = { labels: { app: "upgrade" } };
      await admin.create(DAEMON_SET, {
        ...old,
        metadata: {
          ...old.metadata,
          labels: {
            ...old.metadata!.labels,
            "operator.ptemplate.dev/plugin": "consumer-daemonset",
          },
          ownerReferences: [{
            apiVersion: "pt.example.com/v1alpha1",
            kind: "Ptemplate",
            name: "upgrade",
            uid: pt.metadata!.uid!,
            controller: true,
            blockOwnerDeletion: true,
          }],
        },
      } as KubeObject);
      manager = start();
      const replaced = await eventually(async () => {
        const ds = await admin.get(DAEMON_SET, "upgrade-consumer", {
          namespace: NS,
        });
        expect(ds.spec!.selector.matchLabels).toEqual({
          "pt.example.com/ptemplate-uid": pt.metadata!.uid,
        });
        return ds;
      }, { timeoutMs: 30_000 });
      await sleep(5_000);
      const later = await admin.get(DAEMON_SET, "upgrade-consumer", { namespace: NS });
      expect(later.metadata?.uid).toBe(replaced.metadata?.uid);
      const reasons = (await events("upgrade")).filter((e) => e.reason === "Replaced");
      expect(reasons.map((e) => [e.message, e.count])).toEqual([[
        "Replaced DaemonSet upgrade-consumer: spec.selector cannot change in place, so it is " +
        "deleted and created anew",
        1,
      ]]);
    });
  } finally {
    truce.abort();
    await fighter;
    await operator.stop();
  }
});
