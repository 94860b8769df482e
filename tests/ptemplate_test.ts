/** The Ptemplate operator end to end: real control plane, kwok nodes, KMM's CRD, GC by owner references. */
import { sleep } from "../util/sleep.ts";
import { expect } from "expect";
import { parse } from "yaml";
import { KMM_MODULE_CRD_FILE, MODULE } from "../crds/kmm_module.ts";
import { PTEMPLATE, type Ptemplate } from "../crds/ptemplate.ts";
import { KubeClient } from "../kube/client.ts";
import type { Unstructured } from "../kube/object.ts";
import { ApiError } from "../kube/errors.ts";
import { DAEMON_SET, NAMESPACE } from "../kube/kinds.ts";
import { CONSUMER_PODS, daemonSetFor, moduleFor, PTEMPLATE_PLUGINS } from "../reconcilers/mod.ts";
import { Manager } from "../runtime/manager/mod.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { EDGE_PTEMPLATES, HARMFUL_PTEMPLATES } from "./fixtures/harmful_ptemplates.ts";
import { INVALID_PTEMPLATES, type InvalidPtemplate } from "./fixtures/invalid_ptemplates.ts";
import { kubectlCacheEnv } from "./fixtures/kubectl.ts";

const PTEMPLATE_CRD_FILE = new URL("../crds/ptemplates.pt.example.com.yaml", import.meta.url);
const WORKER = { "node-role.kubernetes.io/worker": "worker" };

function example(file: string, namespace: string): Ptemplate & Unstructured {
  const pt = parse(Deno.readTextFileSync(new URL(`../examples/${file}`, import.meta.url)));
  return { ...pt, metadata: { ...pt.metadata, namespace } };
}

/** Runs the Ptemplate plugins in-process, counting every write request by verb and path. */
function startOperator(config: KubeClient["transport"]["config"]) {
  const writes: string[] = [];
  const client = new KubeClient(config, {
    onResponse: ({ method, path }) => method !== "GET" && writes.push(`${method} ${path}`),
  });
  // Strict: a plugin reading a field it did not declare fails here rather than reading nothing.
  const manager = new Manager({ client, plugins: PTEMPLATE_PLUGINS, strictReads: true });
  const stop = new AbortController();
  const done = manager.run(stop.signal);
  return {
    manager,
    writes,
    reconciles: () =>
      [
        ...manager.registry.render().matchAll(
          /^controller_runtime_reconcile_total\{[^}]*\} (\d+)$/gm,
        ),
      ]
        .reduce((sum, m) => sum + Number(m[1]), 0),
    async stop() {
      stop.abort();
      await done;
      client.close();
    },
  };
}

function condition(pt: Ptemplate, type: string) {
  return pt.status?.conditions?.find((c) => c.type === type);
}

await integrationTest("ptemplate operator end to end", {
  controllerManager: true,
  scheduler: true,
  kwok: true,
  crds: [PTEMPLATE_CRD_FILE, KMM_MODULE_CRD_FILE],
}, async (plane, step) => {
  const admin = plane.client();
  for (const name of ["demo", "original", "invalid", "scale"]) {
    await admin.create(NAMESPACE, { metadata: { name } });
  }
  await plane.createNodes({ name: "worker-1", labels: WORKER }, {
    name: "worker-2",
    labels: WORKER,
  }, {
    name: "infra-1",
  });
  let operator = startOperator(plane.adminConfig);
  const getPt = (ns: string, name: string) => admin.get(PTEMPLATE, name, { namespace: ns });
  const getModule = (ns: string, name: string) => admin.get(MODULE, name, { namespace: ns });
  const getDs = (ns: string, name: string) => admin.get(DAEMON_SET, name, { namespace: ns });

  try {
    for (const [file, ns] of [["seed.yaml", "demo"], ["original.yaml", "original"]]) {
      await step(`${file} produces exactly the Module and DaemonSet of the design`, async () => {
        const created = await admin.create(PTEMPLATE, example(file, ns));
        const name = created.metadata!.name!;
        const module = await eventually(() => getModule(ns, name));
        const ds = await eventually(() => getDs(ns, `${name}-consumer`));
        // Server defaults (e.g. a container's terminationMessagePath) may be added; every field we
        // set must be there, with the same value, and lists must have exactly our items.
        expect(module.spec).toMatchObject(moduleFor(created).spec);
        expect(ds.spec).toMatchObject(daemonSetFor(created).spec!);
        expect(ds.metadata?.labels).toMatchObject({ app: name });
        for (const child of [module, ds]) {
          expect(child.metadata?.ownerReferences).toEqual([{
            apiVersion: "pt.example.com/v1alpha1",
            kind: "Ptemplate",
            name,
            uid: created.metadata!.uid,
            controller: true,
            blockOwnerDeletion: true,
          }]);
        }
        // Both spellings land in the same places.
        expect(module.spec.imageRepoSecret).toEqual({ name: "pt-char-pull-secret" });
        expect(ds.spec!.template.spec!.imagePullSecrets).toEqual([{ name: "pt-char-pull-secret" }]);
        expect(ds.spec!.template.spec!.containers[0].image).toBe(
          "quay.io/chrisp262/pt-device-plugin:consumer-latest",
        );
      });
    }

    await step(
      "kubectl apply of the original example, unchanged, works and warns it is deprecated",
      async () => {
        await admin.create(NAMESPACE, { metadata: { name: "verbatim" } });
        const kubectl = (...args: string[]) =>
          new Deno.Command(plane.binaries.kubectl, {
            env: kubectlCacheEnv(plane.adminKubeconfigPath),
            args: ["--kubeconfig", plane.adminKubeconfigPath, "-n", "verbatim", ...args],
          }).output().then((out) => ({
            success: out.success,
            stdout: new TextDecoder().decode(out.stdout),
            stderr: new TextDecoder().decode(out.stderr),
          }));
        const file = new URL("../examples/original.yaml", import.meta.url).pathname;
        expect(await Deno.readTextFile(file)).toContain("apiVersion: pt.example.com/v1alpha\n");
        const applied = await kubectl("apply", "-f", file);
        expect(applied).toMatchObject({ success: true });
        expect(applied.stdout).toContain("ptemplate.pt.example.com/ptemplate-sample created");
        expect(applied.stderr).toContain(
          "Warning: pt.example.com/v1alpha Ptemplate is deprecated; use pt.example.com/v1alpha1",
        );
        const listed = await kubectl("get", "pt");
        expect(listed.stdout).toMatch(/^ptemplate-sample\s/m);
        // It works: the operator made its children from the original's spelling.
        const module = await eventually(() => getModule("verbatim", "ptemplate-sample"));
        expect(module.spec.imageRepoSecret).toEqual({ name: "pt-char-pull-secret" });
        await eventually(() => getDs("verbatim", "ptemplate-sample-consumer"));
      },
    );

    await step(
      "a selector key without a value is refused by name, under client-side and server-side kubectl apply",
      async () => {
        await admin.create(NAMESPACE, { metadata: { name: "empty-value" } });
        const dir = await Deno.makeTempDir();
        const kubectl = async (manifest: string, ...args: string[]) => {
          const file = `${dir}/pt.yaml`;
          await Deno.writeTextFile(file, manifest);
          const out = await new Deno.Command(plane.binaries.kubectl, {
            env: kubectlCacheEnv(plane.adminKubeconfigPath),
            args: [
              "--kubeconfig",
              plane.adminKubeconfigPath,
              "-n",
              "empty-value",
              ...args,
              "-f",
              file,
            ],
          }).output();
          return { success: out.success, stderr: new TextDecoder().decode(out.stderr) };
        };
        const manifest = (zone: string) =>
          "apiVersion: pt.example.com/v1alpha1\nkind: Ptemplate\nmetadata: {name: zoned}\n" +
          "spec:\n  selector:\n    node-role.kubernetes.io/worker: worker\n" +
          `    topology.kubernetes.io/zone:${zone}\n`;
        const refusal = /spec\.selector key topology\.kubernetes\.io\/zone has no value/;
        for (const mode of [["apply"], ["apply", "--server-side"], ["create"]]) {
          const result = await kubectl(manifest(""), ...mode);
          expect({ mode, success: result.success }).toEqual({ mode, success: false });
          expect(result.stderr).toMatch(refusal);
        }
        expect(await getPt("empty-value", "zoned").catch((e) => e.code)).toBe(404);
        // An update that empties a key is refused as well, and the stored selector kept.
        expect(await kubectl(manifest(" zone-a"), "apply")).toMatchObject({ success: true });
        const emptied = await kubectl(manifest(""), "apply");
        expect(emptied.success).toBe(false);
        expect(emptied.stderr).toMatch(refusal);
        expect((await getPt("empty-value", "zoned")).spec.selector).toEqual({
          "node-role.kubernetes.io/worker": "worker",
          "topology.kubernetes.io/zone": "zone-a",
        });
        await Deno.remove(dir, { recursive: true });
      },
    );

    await step(
      "consumer pods on kwok nodes show up in status.consumers and the conditions",
      async () => {
        const pt = await eventually(async () => {
          const pt = await getPt("demo", "consumer-pod");
          expect(pt.status?.consumers).toHaveLength(2);
          expect(condition(pt, "ConsumersReady")?.status).toBe("True");
          return pt;
        }, { timeoutMs: 60_000 });
        expect(pt.status!.consumers!.every((n) => n.startsWith("consumer-pod-consumer-"))).toBe(
          true,
        );
        expect(pt.status).toMatchObject({
          readyConsumers: 2,
          desiredConsumers: 2,
          observedGeneration: 1,
        });
        // The original operator's metrics, per Ptemplate.
        const metrics = operator.manager.registry.render();
        expect(metrics).toContain(
          'ptemplate_consumer_pods{namespace="demo",name="consumer-pod"} 2',
        );
        expect(metrics).toMatch(
          /^ptemplate_reconciles_total\{namespace="demo",name="consumer-pod"\} [1-9]/m,
        );
        // Of the consumer Pods, only the fields the aggregator declares: no volumes, no node.
        const pods = operator.manager.pool.cache(CONSUMER_PODS).list({ namespace: "demo" });
        expect(pods).toHaveLength(2);
        for (const pod of pods) {
          expect(pod.spec?.containers.map((c) => Object.keys(c).sort())).toEqual(
            pod.spec?.containers.map(() => ["image", "name"]),
          );
          expect(pod.spec?.volumes).toBeUndefined();
          expect(pod.spec?.nodeName).toBeUndefined();
        }
        // No KMM operator runs: nobody has reported on the Module yet.
        expect(condition(pt, "KernelModuleLoaded")?.reason).toBe("WaitingForKMM");
        expect(condition(pt, "Ready")).toMatchObject({ status: "False", reason: "WaitingForKMM" });
      },
    );

    await step("Module status written as KMM would moves the Module conditions", async () => {
      const report = (loaded: number) =>
        admin.patch(MODULE, "consumer-pod", {
          status: {
            moduleLoader: {
              nodesMatchingSelectorNumber: 2,
              desiredNumber: 2,
              availableNumber: loaded,
            },
            devicePlugin: { nodesMatchingSelectorNumber: 2, desiredNumber: 2, availableNumber: 2 },
          },
        }, { namespace: "demo", subresource: "status" });
      await report(1);
      await eventually(async () => {
        const pt = await getPt("demo", "consumer-pod");
        expect(condition(pt, "KernelModuleLoaded")).toMatchObject({
          status: "False",
          reason: "Progressing",
          message: "kernel module ready on 1 of 2 nodes",
        });
        expect(pt.status?.moduleLoader).toEqual({
          nodesMatchingSelector: 2,
          desired: 2,
          available: 1,
        });
      });
      await report(2);
      await eventually(async () => {
        const pt = await getPt("demo", "consumer-pod");
        expect(condition(pt, "Ready")).toMatchObject({ status: "True", reason: "Ready" });
      });
    });

    await step(
      "changing maxdev, defaultmsg, images, selector and requiredDevices propagates",
      async () => {
        await admin.patch(PTEMPLATE, "consumer-pod", {
          spec: {
            maxdev: 8,
            defaultmsg: "hello",
            consumerimage: "registry.example:5000/team/consumer:v2",
            deviceplugin: "registry.example:5000/team/plugin:v2",
            requiredDevices: 3,
            selector: { "node-role.kubernetes.io/worker": "worker", zone: "a" },
          },
        }, { namespace: "demo" });
        await eventually(async () => {
          const module = await getModule("demo", "consumer-pod");
          expect(module.spec.moduleLoader.container.modprobe.parameters).toEqual([
            "max_dev=8",
            "default_msg=hello",
          ]);
          expect(module.spec.devicePlugin?.container.image).toBe(
            "registry.example:5000/team/plugin:v2",
          );
          expect(module.spec.selector).toEqual({
            "node-role.kubernetes.io/worker": "worker",
            zone: "a",
          });
          const ds = await getDs("demo", "consumer-pod-consumer");
          const pod = ds.spec!.template.spec!;
          expect(pod.containers[0].image).toBe("registry.example:5000/team/consumer:v2");
          expect(pod.containers[0].resources?.limits).toEqual({ "example.com/ptemplate": "3" });
          expect(pod.nodeSelector).toEqual({
            "node-role.kubernetes.io/worker": "worker",
            zone: "a",
          });
        });
        // No node is in zone a: the status says what to do about it.
        await eventually(async () => {
          const pt = await getPt("demo", "consumer-pod");
          expect(pt.status?.observedGeneration).toBe(2);
          expect(condition(pt, "ConsumersReady")).toMatchObject({
            status: "False",
            reason: "NoMatchingNodes",
          });
        }, { timeoutMs: 60_000 });
      },
    );

    await step("a hand edit of a child is reverted; a deleted child comes back", async () => {
      await admin.patch(MODULE, "consumer-pod", {
        spec: { devicePlugin: { container: { image: "evil/image:1" } } },
      }, { namespace: "demo" });
      await eventually(async () =>
        expect((await getModule("demo", "consumer-pod")).spec.devicePlugin?.container.image)
          .toBe("registry.example:5000/team/plugin:v2")
      );
      const before = await getDs("demo", "consumer-pod-consumer");
      await admin.delete(DAEMON_SET, "consumer-pod-consumer", { namespace: "demo" });
      await eventually(async () => {
        const again = await getDs("demo", "consumer-pod-consumer");
        expect(again.metadata?.uid).not.toBe(before.metadata?.uid);
      });
    });

    await step(
      "the caches keep what the plugins read: a hand edit of a DaemonSet is still seen and put back",
      async () => {
        const cached = operator.manager.pool.cache(DAEMON_SET).get("demo", "consumer-pod-consumer");
        // What we applied and the status the aggregator reads. (The defaults the API server
        // filled in at our create are ours too, in our field set: they stay.)
        expect(cached?.spec?.template.spec?.containers[0].image).toBeDefined();
        expect(cached?.status).toBeDefined();
        expect(operator.manager.registry.render()).toMatch(
          /^informer_cache_objects\{group="apps",kind="DaemonSet",selector=""\} [1-9]/m,
        );
        // A value we set, edited by hand: the edit moves it to another field manager, and the
        // projection (which keeps what any manager set) shows the drift.
        const selector = { ...cached!.spec!.template.spec!.nodeSelector };
        const [key] = Object.keys(selector);
        await admin.patch(DAEMON_SET, "consumer-pod-consumer", {
          spec: { template: { spec: { nodeSelector: { [key]: "hand-edited" } } } },
        }, { namespace: "demo" });
        await eventually(async () =>
          expect((await getDs("demo", "consumer-pod-consumer")).spec?.template.spec?.nodeSelector)
            .toEqual(selector)
        );
      },
    );

    /** Creates each (strict field validation, as kubectl) and expects a refusal naming it. */
    const expectRefused = async (list: InvalidPtemplate[], prefix: string) => {
      const accepted: string[] = [];
      for (const [index, invalid] of list.entries()) {
        const object = {
          apiVersion: "pt.example.com/v1alpha1",
          kind: "Ptemplate",
          metadata: { name: invalid.name ?? `${prefix}-${index}`, namespace: "invalid" },
          ...(invalid.spec === undefined ? {} : { spec: invalid.spec }),
        };
        const error = await admin.create(PTEMPLATE, object as Unstructured, {
          fieldValidation: "Strict",
        })
          .then(() => undefined, (e) => e);
        if (!(error instanceof ApiError)) {
          accepted.push(invalid.why);
          continue;
        }
        expect({ why: invalid.why, refused: [400, 422].includes(error.code) })
          .toEqual({ why: invalid.why, refused: true });
        expect({ why: invalid.why, message: error.message }).toEqual({
          why: invalid.why,
          message: expect.stringContaining(invalid.names),
        });
      }
      expect(accepted).toEqual([]);
      // None reached the operator: its cache never saw one.
      expect(operator.manager.pool.cache(PTEMPLATE).list({ namespace: "invalid" })).toEqual([]);
    };

    await step(
      `${INVALID_PTEMPLATES.length} invalid Ptemplates are refused, each naming its field`,
      async () => {
        expect(INVALID_PTEMPLATES.length).toBeGreaterThanOrEqual(30);
        await expectRefused(INVALID_PTEMPLATES, "invalid");
      },
    );

    await step(
      `${HARMFUL_PTEMPLATES.length} inputs that once made harmful children are refused by name`,
      () => expectRefused(HARMFUL_PTEMPLATES, "harmful"),
    );

    await step(
      "inputs on the edge of every bound are accepted, and their children made",
      async () => {
        await admin.create(NAMESPACE, { metadata: { name: "edge" } });
        for (const [index, edge] of EDGE_PTEMPLATES.entries()) {
          await admin.create(PTEMPLATE, {
            metadata: { name: `edge-${index}`, namespace: "edge" },
            spec: edge.spec,
          } as Unstructured, { fieldValidation: "Strict" });
        }
        await eventually(async () => {
          for (const [index, edge] of EDGE_PTEMPLATES.entries()) {
            const name = `edge-${index}`;
            const made = await Promise.all([
              getModule("edge", name).then(() => true, () => false),
              getDs("edge", `${name}-consumer`).then(() => true, () => false),
            ]);
            expect({ why: edge.why, made }).toEqual({ why: edge.why, made: [true, true] });
            const ready = condition(await getPt("edge", name), "Ready");
            expect({ why: edge.why, reason: ready?.reason }).not.toEqual({
              why: edge.why,
              reason: "ChildRefused",
            });
          }
        }, { timeoutMs: 60_000 });
      },
    );

    await step(
      "50 Ptemplates converge; a full resync and a restart then make zero writes",
      async () => {
        for (let i = 0; i < 50; i++) {
          await admin.create(PTEMPLATE, {
            metadata: { name: `pt-${i}`, namespace: "scale" },
            spec: { selector: { pool: `none-${i}` }, maxdev: 4 + (i % 3) },
          } as Unstructured);
        }
        await eventually(async () => {
          const list = await admin.list(PTEMPLATE, {
            namespace: "scale",
          });
          expect(list.items.filter((pt) => pt.status?.observedGeneration === 1)).toHaveLength(50);
          expect((await admin.list(MODULE, { namespace: "scale" })).items).toHaveLength(50);
          expect((await admin.list(DAEMON_SET, { namespace: "scale" })).items).toHaveLength(50);
        }, { timeoutMs: 120_000, intervalMs: 500 });
        // Let the last child and pod events run through, and the count of a repeated Event,
        // which is written at most every 10 s.
        await eventually(async () => {
          const before = operator.writes.length;
          await sleep(11_000);
          expect(operator.writes.length).toBe(before);
        }, { timeoutMs: 90_000 });

        const writesBefore = operator.writes.length;
        const reconcilesBefore = operator.reconciles();
        for (const controller of operator.manager.controllers) controller.enqueueAll();
        // Every Ptemplate (52 of them) by each of the three plugins.
        await eventually(() =>
          expect(operator.reconciles()).toBeGreaterThanOrEqual(reconcilesBefore + 3 * 52)
        );
        await sleep(1_000);
        expect(operator.writes.slice(writesBefore)).toEqual([]);

        await operator.stop();
        operator = startOperator(plane.adminConfig);
        await eventually(() => expect(operator.reconciles()).toBeGreaterThanOrEqual(3 * 52), {
          timeoutMs: 60_000,
        });
        await sleep(2_000);
        expect(operator.writes).toEqual([]);
      },
    );

    await step("deleting a Ptemplate garbage-collects its Module and DaemonSet", async () => {
      await admin.delete(PTEMPLATE, "ptemplate-sample", { namespace: "original" });
      await eventually(async () => {
        const module = await getModule("original", "ptemplate-sample").catch((e) => e);
        const ds = await getDs("original", "ptemplate-sample-consumer").catch((e) => e);
        expect([module.code, ds.code]).toEqual([404, 404]);
      }, { timeoutMs: 90_000 });
    });
  } finally {
    await operator.stop();
  }
});

await integrationTest("ptemplate operator without KMM, then with it", {
  controllerManager: true,
  scheduler: true,
  kwok: true,
  crds: [PTEMPLATE_CRD_FILE],
}, async (plane, step) => {
  const admin = plane.client();
  await admin.create(NAMESPACE, { metadata: { name: "demo" } });
  await plane.createNodes({ name: "worker-1", labels: WORKER });
  const operator = startOperator(plane.adminConfig);
  try {
    await admin.create(PTEMPLATE, example("seed.yaml", "demo"));

    await step(
      "without KMM's CRD the DaemonSet and status still work, and Ready says KMM is missing",
      async () => {
        await eventually(async () => {
          const pt = await admin.get(PTEMPLATE, "consumer-pod", {
            namespace: "demo",
          });
          expect(condition(pt, "Ready")).toMatchObject({
            status: "False",
            reason: "KMMNotInstalled",
            message: expect.stringContaining("install Kernel Module Management"),
          });
          expect(condition(pt, "ConsumersReady")?.status).toBe("True");
          expect(pt.status?.consumers).toHaveLength(1);
        }, { timeoutMs: 60_000 });
      },
    );

    await step("once the CRD appears the Module is created, without a restart", async () => {
      await plane.installCrds(KMM_MODULE_CRD_FILE);
      const module = await eventually(
        () => admin.get(MODULE, "consumer-pod", { namespace: "demo" }),
        { timeoutMs: 60_000, intervalMs: 500 },
      );
      expect(module.spec.moduleLoader.container.modprobe.moduleName).toBe("ptemplate_char_dev");
      await eventually(async () => {
        const pt = await admin.get(PTEMPLATE, "consumer-pod", {
          namespace: "demo",
        });
        expect(condition(pt, "KernelModuleLoaded")?.reason).toBe("WaitingForKMM");
      });
    });
  } finally {
    await operator.stop();
  }
});
