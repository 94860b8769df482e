/**
 * Events wait for a slow lane of their own; past a bounded backlog new ones are dropped and the
 * log says so, as client-go's broadcaster does, instead of holding every Event of a large start
 * in memory for minutes. Against the real API server: what was kept is written, nothing more.
 */
import { expect } from "expect";
import { KubeClient } from "../kube/client.ts";
import { EVENT, NAMESPACE } from "../kube/kinds.ts";
import { KubeEventRecorder, type Logger } from "../runtime/observe/mod.ts";
import { integrationTest } from "../testing/mod.ts";

await integrationTest(
  "events: a bounded backlog, the rest dropped and said",
  {},
  async (plane, step) => {
    const admin = plane.client();
    await admin.create(NAMESPACE, { metadata: { name: "ev" } });
    const warned: string[] = [];
    const log = {
      warn: (message: string, properties: Record<string, unknown>) =>
        warned.push(message.replace(/\{(\w+)\}/g, (_, k) => String(properties[k]))),
      with: () => log,
    } as unknown as Logger;
    const recorder = new KubeEventRecorder(new KubeClient(plane.adminConfig), {
      component: "backlog-test",
      log,
      batchMs: 0,
      rate: { qps: 1, burst: 1 },
      maxBacklog: 3,
    });
    /** The names of the objects the Events in `namespace` are about, sorted. */
    const about = async (namespace: string) =>
      (await admin.list(EVENT, { namespace })).items.map((e) =>
        (e as { involvedObject: { name: string } }).involvedObject.name
      ).sort();
    const object = (i: number) => ({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: `cm-${i}`, namespace: "ev", uid: `uid-${i}` },
    });

    await step("10 Normal Events at once: 3 wait, 7 are dropped with a warning", async () => {
      for (let i = 0; i < 10; i++) {
        recorder.record(object(i), { type: "Normal", reason: "Made", message: `made ${i}` });
      }
      // Warnings may wait in a backlog twice as long.
      for (let i = 10; i < 16; i++) {
        recorder.record(object(i), { type: "Warning", reason: "Broken", message: `broken ${i}` });
      }
      await recorder.flush();
      expect(await about("ev")).toEqual(["cm-0", "cm-1", "cm-10", "cm-11", "cm-12", "cm-2"]);
      expect(warned[0]).toMatch(
        /^3 Events wait to be written \(at most 1 a second\): Normal Made on ev\/cm-3 and others are dropped$/,
      );
    });

    await step("once the backlog has gone out, Events are kept again", async () => {
      recorder.record(object(20), { type: "Normal", reason: "Made", message: "made 20" });
      await recorder.close();
      expect(await about("ev")).toContain("cm-20");
    });

    await step(
      "a replica holding a third of the shards has a third of the lane and backlog",
      async () => {
        await admin.create(NAMESPACE, { metadata: { name: "ev-share" } });
        warned.length = 0;
        let share = 1 / 3;
        const sharing = new KubeEventRecorder(new KubeClient(plane.adminConfig), {
          component: "backlog-test",
          log,
          batchMs: 0,
          rate: { qps: 3, burst: 3 },
          maxBacklog: 6,
          share: () => share,
        });
        const inShare = (i: number) => ({
          ...object(i),
          metadata: { ...object(i).metadata, namespace: "ev-share" },
        });
        for (let i = 0; i < 5; i++) {
          sharing.record(inShare(i), { type: "Normal", reason: "Made", message: `made ${i}` });
        }
        await sharing.flush();
        expect(await about("ev-share")).toEqual(["cm-0", "cm-1"]);
        expect(warned[0]).toMatch(/^2 Events wait to be written \(at most 1 a second\)/);

        // The others left: this replica holds every shard, and the whole backlog again.
        share = 1;
        for (let i = 5; i < 12; i++) {
          sharing.record(inShare(i), { type: "Normal", reason: "Made", message: `made ${i}` });
        }
        await sharing.close();
        expect(await about("ev-share")).toEqual(
          ["cm-0", "cm-1", "cm-10", "cm-5", "cm-6", "cm-7", "cm-8", "cm-9"],
        );
      },
    );
  },
);
