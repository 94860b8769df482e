/**
 * Writes a ClusterConfig as a one-context kubeconfig that kubectl and our loader both read: in
 * YAML's JSON form, so that neither writing it nor reading it back needs a YAML library.
 */
import type { ClusterConfig } from "./cluster_config.ts";

function base64(text: string): string {
  return btoa(String.fromCharCode(...new TextEncoder().encode(text)));
}

/** A self-contained kubeconfig (certificates inlined as `*-data`) with one context named `name`. */
export function kubeconfigYaml(config: ClusterConfig, name = "ptemplate"): string {
  const user: Record<string, unknown> = {};
  if (config.clientCertData) user["client-certificate-data"] = base64(config.clientCertData);
  if (config.clientKeyData) user["client-key-data"] = base64(config.clientKeyData);
  if (config.token) user.token = config.token;
  if (config.tokenFile) user.tokenFile = config.tokenFile;
  if (config.exec) {
    user.exec = {
      apiVersion: config.exec.apiVersion ?? "client.authentication.k8s.io/v1",
      command: config.exec.command,
      args: config.exec.args,
      env: config.exec.env,
      interactiveMode: "Never",
    };
  }
  const cluster: Record<string, unknown> = { server: config.server };
  if (config.caData) cluster["certificate-authority-data"] = base64(config.caData);
  if (config.insecureSkipTlsVerify) cluster["insecure-skip-tls-verify"] = true;
  return JSON.stringify(
    {
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name, cluster }],
      users: [{ name, user }],
      contexts: [{ name, context: { cluster: name, user: name, namespace: config.namespace } }],
      "current-context": name,
    },
    null,
    2,
  ) + "\n";
}
