/**
 * `deno task cluster [--nodes N]`: runs the test control plane for a person until Ctrl-C, with N
 * kwok worker nodes that take pods and advertise the device, as `deno task dev`'s do.
 */
import { parseArgs } from "node:util";
import { log, setupLogging, shutdownSignal } from "../runtime/mod.ts";
import { ControlPlane } from "./control_plane.ts";
import { WORKER_LABELS, workerNodes } from "./fake_nodes.ts";

const USAGE = "usage: deno task cluster [--nodes N]  (N kwok worker nodes, default 0)";

let nodes: number;
try {
  const { values } = parseArgs({ args: Deno.args, options: { nodes: { type: "string" } } });
  nodes = Number(values.nodes ?? 0);
  if (!Number.isInteger(nodes) || nodes < 0 || nodes > 100) {
    throw new Error(`--nodes takes a whole number from 0 to 100, not "${values.nodes}"`);
  }
} catch (error) {
  console.error(`error: ${(error as Error).message}\n${USAGE}`);
  Deno.exit(2);
}

// Before anything starts: Ctrl-C then stops what has started (its repeats, which `deno task`
// delivers too, are the same request; one after 2 s exits at once, and the harness kills the
// components on exit).
setupLogging({ format: "text" });
const interrupted = shutdownSignal(log("cluster"));

let plane: ControlPlane;
try {
  plane = await ControlPlane.start({
    controllerManager: true,
    scheduler: true,
    kwok: true,
    handleSignals: false,
    progress: (line) => console.error(line),
  });
} catch (error) {
  console.error(`error: ${(error as Error).message}`);
  Deno.exit(1);
}
await plane.createNodes(...workerNodes(nodes));
const kubectl = `kubectl --kubeconfig ${plane.adminKubeconfigPath}`;
const worker = Object.entries(WORKER_LABELS).map(([k, v]) => `${k}=${v}`).join(",");

console.log(`
Control plane is up (Kubernetes ${await version()}), API server ${plane.server}

  export KUBECONFIG=${plane.adminKubeconfigPath}
  ${kubectl} get namespaces
${
  nodes
    ? `  ${kubectl} get nodes    # ${nodes} kwok worker(s), ${worker}, example.com/ptemplate: 64`
    : "  (no nodes: deno task cluster --nodes 2 adds kwok workers that take pods)"
}

Component logs: ${plane.dir}/*.log
Component PIDs: ${plane.pids().join(" ")}
(no kubectl? one was built with the control plane: ${plane.binaries.kubectl})
Press Ctrl-C to stop everything.`);

async function version(): Promise<string> {
  const info = await plane.client().request<{ gitVersion: string }>("GET", "/version");
  return info.gitVersion;
}

if (!interrupted.aborted) {
  await new Promise((resolve) => interrupted.addEventListener("abort", resolve, { once: true }));
}
console.error("stopping the control plane …");
await plane.stop();
console.error("stopped; nothing left behind");
Deno.exit(0);
