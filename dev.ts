/**
 * `deno task dev`: a local control plane with two fake worker nodes, our CRDs and KMM's, the
 * sample Ptemplate, and the operator running against it; Ctrl-C stops everything.
 */
import { parse } from "yaml";
import { KMM_MODULE_CRD_FILE, MODULE } from "./crds/kmm_module.ts";
import { PTEMPLATE, type Ptemplate } from "./crds/ptemplate.ts";
import {
  CLUSTER_ROLE,
  CLUSTER_ROLE_BINDING,
  DAEMON_SET,
  POD,
  SERVICE_ACCOUNT,
  type Unstructured,
} from "./kube/mod.ts";
import { metricsRoles } from "./cli/manifests/rbac_manifests.ts";
import { METRICS_READER_RULES, PTEMPLATE_OPERATOR } from "./runtime/mod.ts";
import { main } from "./main.ts";
import { ControlPlane } from "./testing/control_plane.ts";
import { workerNodes } from "./testing/fake_nodes.ts";
import { eventually } from "./testing/eventually.ts";
import { freePorts } from "./testing/ports.ts";

const say = (text: string) => console.log(text);

const plane = await ControlPlane.start({
  controllerManager: true,
  scheduler: true,
  kwok: true,
  handleSignals: false,
  crds: [new URL("./crds/ptemplates.pt.example.com.yaml", import.meta.url), KMM_MODULE_CRD_FILE],
  progress: (line) => console.error(line),
});
const admin = plane.client();
await plane.createNodes(...workerNodes(2));

// The operator exactly as `deno task start` runs it (the same command line, flags and defaults),
// in this process; its Ctrl-C handling drains it, then this program stops the control plane.
const [metricsPort, healthPort] = freePorts(2);
const operator = main([
  "run",
  `--kubeconfig=${plane.adminKubeconfigPath}`,
  `--metrics-bind-address=127.0.0.1:${metricsPort}`,
  `--health-probe-bind-address=127.0.0.1:${healthPort}`,
  "--log-format=text",
]);
let exited = false;
void operator.finally(() => exited = true);

// Who may read /metrics may ask `explain`: a ServiceAccount bound to the metrics reader role, as a
// Prometheus would be in a cluster (a token is made for it when explain asks).
const reader = metricsRoles(PTEMPLATE_OPERATOR).reader;
await admin.create(SERVICE_ACCOUNT, { metadata: { name: "explainer", namespace: "default" } });
await admin.create(CLUSTER_ROLE, { metadata: { name: reader }, rules: METRICS_READER_RULES });
await admin.create(CLUSTER_ROLE_BINDING, {
  metadata: { name: `${reader}-explainer` },
  roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: reader },
  subjects: [{ kind: "ServiceAccount", name: "explainer", namespace: "default" }],
});

const sampleFile = new URL("./examples/seed.yaml", import.meta.url);
const sample = parse(await Deno.readTextFile(sampleFile)) as Ptemplate & Unstructured;
await admin.create(PTEMPLATE, {
  ...sample,
  metadata: { ...sample.metadata, namespace: "default" },
});

const pt = await eventually(async () => {
  if (exited) return undefined;
  const pt = await admin.get(PTEMPLATE, "consumer-pod", {
    namespace: "default",
  });
  if ((pt.status?.consumers?.length ?? 0) < 2) throw new Error("consumers not up yet");
  return pt;
}, { timeoutMs: 120_000, intervalMs: 500 });
if (!pt) {
  console.error("the operator stopped before the sample was up; stopping the control plane …");
  await plane.stop();
  Deno.exit(await operator);
}
const module = await admin.get(MODULE, "consumer-pod", { namespace: "default" });
const ds = await admin.get(DAEMON_SET, "consumer-pod-consumer", {
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
  curl -s 'http://127.0.0.1:${metricsPort}/metrics' | grep controller_runtime_reconcile_total
  deno task start explain ptemplate default/consumer-pod --kubeconfig ${plane.adminKubeconfigPath} --endpoint http://127.0.0.1:${metricsPort} --service-account default/explainer
  curl -s 'http://127.0.0.1:${healthPort}/readyz?verbose'

(no kubectl? one was built with the control plane: ${plane.binaries.kubectl})
Press Ctrl-C to stop the operator and the control plane.
`);

// Ctrl-C (or SIGTERM) drains the operator; then the control plane goes.
const code = await operator;
console.error("the operator has stopped; stopping the control plane …");
await plane.stop();
Deno.exit(code);
