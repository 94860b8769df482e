/** `deno task cluster`: runs the test control plane for a person until Ctrl-C. */
import { ControlPlane } from "./control_plane.ts";

const plane = await ControlPlane.start({
  controllerManager: true,
  scheduler: true,
  kwok: true,
  progress: (line) => console.error(line),
});

console.log(`
Control plane is up (Kubernetes ${await version()}), API server ${plane.server}

  export KUBECONFIG=${plane.adminKubeconfigPath}
  kubectl --kubeconfig ${plane.adminKubeconfigPath} get namespaces

Component logs: ${plane.dir}/*.log
Component PIDs: ${plane.pids().join(" ")}
Press Ctrl-C to stop everything.`);

async function version(): Promise<string> {
  const info = await plane.client().request<{ gitVersion: string }>("GET", "/version");
  return info.gitVersion;
}

// ControlPlane stops itself on SIGINT/SIGTERM; keep the process alive until then.
await new Promise(() => {});
