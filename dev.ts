/**
 * `deno task dev`: a local control plane with two fake worker nodes, our CRDs and KMM's, the
 * sample Ptemplate, and the operator running against it; Ctrl-C stops everything.
 */
import { parse } from "yaml";
import { KMM_MODULE_CRD_FILE, MODULE } from "./crds/kmm_module.ts";
import { PTEMPLATE, type Ptemplate } from "./crds/ptemplate.ts";
import { DAEMON_SET, KubeClient, POD, type Unstructured } from "./kube/mod.ts";
import { log, Manager, setupLogging } from "./runtime/mod.ts";
import { PTEMPLATE_PLUGINS } from "./reconcilers/mod.ts";
import { ControlPlane } from "./testing/control_plane.ts";
import { eventually } from "./testing/eventually.ts";

const say = (text: string) => console.log(text);
const WORKER = { "node-role.kubernetes.io/worker": "worker" };

const plane = await ControlPlane.start({
  controllerManager: true,
  scheduler: true,
  kwok: true,
  handleSignals: false,
  crds: [new URL("./crds/ptemplates.pt.example.com.yaml", import.meta.url), KMM_MODULE_CRD_FILE],
  progress: (line) => console.error(line),
});
const admin = plane.client();
await plane.createNodes({ name: "worker-1", labels: WORKER }, { name: "worker-2", labels: WORKER });

setupLogging({ level: "info", format: "text" });
const client = new KubeClient(plane.adminConfig, { userAgent: "ptemplate-operator/dev" });
const manager = new Manager({
  client,
  plugins: PTEMPLATE_PLUGINS,
  metricsBind: { hostname: "127.0.0.1", port: 0 },
  healthBind: { hostname: "127.0.0.1", port: 0 },
  log: log("dev"),
});
const stop = new AbortController();
const running = manager.run(stop.signal);

const sampleFile = new URL("./examples/seed.yaml", import.meta.url);
const sample = parse(await Deno.readTextFile(sampleFile)) as Ptemplate & Unstructured;
await admin.create(PTEMPLATE, {
  ...sample,
  metadata: { ...sample.metadata, namespace: "default" },
});

const pt = await eventually(async () => {
  const pt = await admin.get<Ptemplate & Unstructured>(PTEMPLATE, "consumer-pod", {
    namespace: "default",
  });
  if ((pt.status?.consumers?.length ?? 0) < 2) throw new Error("consumers not up yet");
  return pt;
}, { timeoutMs: 120_000, intervalMs: 500 });
const module = await admin.get<Unstructured>(MODULE, "consumer-pod", { namespace: "default" });
const ds = await admin.get<Unstructured>(DAEMON_SET, "consumer-pod-consumer", {
  namespace: "default",
});
const pods = await admin.list(POD, { namespace: "default", labelSelector: "app=consumer-pod" });
const ready = pt.status?.conditions?.find((c) => c.type === "Ready");
const kubectl = `kubectl --kubeconfig ${plane.adminKubeconfigPath}`;

say(`
The operator is running against a local control plane (${plane.server}).
From ${sampleFile.pathname} it made:

  Module ${module.metadata?.name}           loads ptemplate_char_dev (${
  (module.spec as { moduleLoader: { container: { modprobe: { parameters: string[] } } } })
    .moduleLoader.container
    .modprobe.parameters.join(" ")
}) on nodes with node-role.kubernetes.io/worker=worker
  DaemonSet ${ds.metadata?.name}  consumer pods: ${
  pods.items.map((p) => p.metadata?.name).join(", ")
}
  Ptemplate status: Ready=${ready?.status} (${ready?.reason}: ${ready?.message})
    (no KMM operator runs here, so nobody reports the Module loaded; write its status to see Ready)

Try:
  export KUBECONFIG=${plane.adminKubeconfigPath}
  ${kubectl} get ptemplates,modules,daemonsets,pods
  ${kubectl} describe ptemplate consumer-pod
  ${kubectl} patch ptemplate consumer-pod --type merge -p '{"spec":{"maxdev":8}}'
  ${kubectl} patch module consumer-pod --subresource status --type merge -p '{"status":{"moduleLoader":{"nodesMatchingSelectorNumber":2,"desiredNumber":2,"availableNumber":2},"devicePlugin":{"nodesMatchingSelectorNumber":2,"desiredNumber":2,"availableNumber":2}}}'
  curl -s http://127.0.0.1:${manager.endpoints.metricsPort}/metrics | grep controller_runtime_reconcile_total
  curl -s http://127.0.0.1:${manager.endpoints.healthPort}/readyz?verbose

(no kubectl? one was built with the control plane: ${plane.binaries.kubectl})
Press Ctrl-C to stop the operator and the control plane.
`);

await new Promise<void>((resolve) => {
  const onSignal = () => resolve();
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);
});
console.error("stopping the operator, then the control plane …");
stop.abort();
await running;
client.close();
await plane.stop();
Deno.exit(0);
