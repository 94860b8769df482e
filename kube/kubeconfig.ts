/**
 * Reads kubeconfig files the way kubectl does (several files merged, first definition wins,
 * paths relative to the file that names them) into a ClusterConfig.
 */
import type { ClusterConfig } from "./cluster_config.ts";
import { checkToken, readCredentialFile } from "./credential_source.ts";
import {
  KubeconfigError,
  type NamedCluster,
  type NamedContext,
  type NamedUser,
  readKubeconfig,
} from "./kubeconfig_document.ts";

export { KubeconfigError };

/** One kubeconfig file's text and where it came from. */
export interface KubeconfigSource {
  /** The file's path; relative paths inside it are resolved against its folder. */
  path: string;
  /** The file's YAML text. */
  text: string;
}

/** What was picked from the merged files, with every path already absolute. */
export interface SelectedContext {
  /** The context used: `--context`, or the first `current-context` of the merged files. */
  contextName: string;
  /** The cluster the context names. */
  clusterName: string;
  /** The user the context names; empty when it names none. */
  userName: string;
  /** The cluster's entry, its file paths made absolute. */
  cluster: NamedCluster;
  /** The user's entry, its file paths made absolute. */
  user: NamedUser;
  /** The context's default namespace, if it sets one. */
  namespace?: string;
  /** The files that were merged, in order. */
  files: string[];
}

function dirname(path: string): string {
  const i = path.lastIndexOf("/");
  return i <= 0 ? "/" : path.slice(0, i);
}

function resolve(base: string, path: string | undefined): string | undefined {
  if (!path) return path;
  if (path.startsWith("/")) return path;
  if (path.startsWith("~/")) return `${Deno.env.get("HOME") ?? ""}/${path.slice(2)}`;
  return `${base}/${path}`;
}

/** Makes a file's relative paths absolute against its own folder, as kubectl does before merging. */
function resolvePaths(
  kind: "cluster" | "user",
  entry: NamedCluster & NamedUser,
  base: string,
): NamedCluster & NamedUser {
  const out = { ...entry };
  if (kind === "cluster") {
    out["certificate-authority"] = resolve(base, entry["certificate-authority"]);
  } else {
    out["client-certificate"] = resolve(base, entry["client-certificate"]);
    out["client-key"] = resolve(base, entry["client-key"]);
    out.tokenFile = resolve(base, entry.tokenFile);
    // A bare command name is looked up on PATH; one with a folder is relative to the file.
    if (entry.exec?.command?.includes("/")) {
      out.exec = { ...entry.exec, command: resolve(base, entry.exec.command)! };
    }
  }
  return out;
}

/**
 * Merges kubeconfig files and picks a context. The first file that sets `current-context` wins,
 * and for clusters, users and contexts the first file that defines a name wins.
 */
export async function selectContext(
  sources: KubeconfigSource[],
  options: { context?: string } = {},
): Promise<SelectedContext> {
  const clusters = new Map<string, NamedCluster>();
  const users = new Map<string, NamedUser>();
  const contexts = new Map<string, NamedContext>();
  let current: string | undefined;
  for (const source of sources) {
    const doc = await readKubeconfig(source.text, source.path);
    const base = dirname(source.path);
    current ||= doc.currentContext;
    for (const { name, cluster } of doc.clusters) {
      if (!clusters.has(name)) clusters.set(name, resolvePaths("cluster", cluster, base));
    }
    for (const { name, user } of doc.users) {
      if (!users.has(name)) users.set(name, resolvePaths("user", user, base));
    }
    for (const { name, context } of doc.contexts) {
      if (!contexts.has(name)) contexts.set(name, context);
    }
  }
  const files = sources.map((s) => s.path).join(", ");
  const contextName = options.context || current;
  if (!contextName) {
    throw new KubeconfigError(
      `no current-context in ${files}: pass --context <name> ` +
        `(contexts: ${[...contexts.keys()].join(", ") || "none"})`,
    );
  }
  const context = contexts.get(contextName);
  if (!context) {
    throw new KubeconfigError(
      `context "${contextName}" is not defined in ${files} ` +
        `(contexts: ${[...contexts.keys()].join(", ") || "none"})`,
      { misuse: Boolean(options.context) },
    );
  }
  const cluster = context.cluster ? clusters.get(context.cluster) : undefined;
  if (!cluster?.server) {
    throw new KubeconfigError(
      `context "${contextName}" names cluster "${context.cluster ?? ""}", which is not defined ` +
        `or has no server in ${files}`,
    );
  }
  const user = context.user ? users.get(context.user) : {};
  if (!user) {
    throw new KubeconfigError(
      `context "${contextName}" names user "${context.user}", which is not defined in ${files}`,
    );
  }
  return {
    contextName,
    clusterName: context.cluster!,
    userName: context.user ?? "",
    cluster,
    user,
    namespace: context.namespace,
    files: sources.map((s) => s.path),
  };
}

function decodeBase64(data: string, what: string): string {
  try {
    return new TextDecoder().decode(Uint8Array.from(atob(data.trim()), (c) => c.charCodeAt(0)));
  } catch {
    throw new KubeconfigError(`${what} is not valid base64`);
  }
}

function readPem(path: string, what: string): Promise<string> {
  return readCredentialFile(path, what, { fail: (message) => new KubeconfigError(message) });
}

/**
 * The server URL, checked: http(s), a host, and nothing that would be a secret in every message
 * that names the server (a user name or password, a query). Never quoted when it is refused.
 */
function checkServer(server: string, where: string, cluster: string): string {
  const refuse = (what: string) =>
    new KubeconfigError(
      `${where}: the server URL of cluster "${cluster}" (not shown here) ${what}`,
    );
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw refuse("is not a URL; write it as https://host:port");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw refuse("must start with https:// (or http://)");
  }
  if (url.username || url.password) {
    throw refuse(
      "has a user name or password in it, which Kubernetes clients never send; remove it and " +
        "give the credentials in the user entry (a token, a client certificate or an exec plugin)",
    );
  }
  if (url.search || url.hash) {
    throw refuse(
      "has a query or fragment (?… or #…), which Kubernetes clients do not use and which may " +
        "hold a secret; remove it",
    );
  }
  return server.replace(/\/+$/, "");
}

/** Turns a selected context into a ClusterConfig, reading the certificate files it names. */
export async function clusterConfigFrom(
  selected: SelectedContext,
  options: { namespace?: string } = {},
): Promise<ClusterConfig> {
  const { cluster, user, contextName } = selected;
  const where = `context "${contextName}" of ${selected.files.join(", ")}`;
  if (user["auth-provider"]) {
    throw new KubeconfigError(
      `${where}: user "${selected.userName}" uses auth-provider "${user["auth-provider"].name}", ` +
        `which was removed from Kubernetes clients; use an exec plugin instead`,
    );
  }
  const caData = cluster["certificate-authority-data"]
    ? decodeBase64(cluster["certificate-authority-data"], `${where}: certificate-authority-data`)
    : cluster["certificate-authority"]
    ? await readPem(
      cluster["certificate-authority"],
      `the certificate-authority of cluster "${selected.clusterName}"`,
    )
    : undefined;
  const clientCertData = user["client-certificate-data"]
    ? decodeBase64(user["client-certificate-data"], `${where}: client-certificate-data`)
    : user["client-certificate"]
    ? await readPem(
      user["client-certificate"],
      `the client-certificate of user "${selected.userName}"`,
    )
    : undefined;
  const clientKeyData = user["client-key-data"]
    ? decodeBase64(user["client-key-data"], `${where}: client-key-data`)
    : user["client-key"]
    ? await readPem(user["client-key"], `the client-key of user "${selected.userName}"`)
    : undefined;
  if (Boolean(clientCertData) !== Boolean(clientKeyData)) {
    throw new KubeconfigError(
      `${where}: user "${selected.userName}" has a client ${
        clientCertData ? "certificate but no key" : "key but no certificate"
      }; set both client-certificate(-data) and client-key(-data)`,
    );
  }
  if (user.token) {
    checkToken(
      user.token,
      `user "${selected.userName}" in ${selected.files.join(", ")}`,
      (message) => new KubeconfigError(message),
    );
  }
  return {
    server: checkServer(cluster.server!, where, selected.clusterName),
    caData,
    insecureSkipTlsVerify: cluster["insecure-skip-tls-verify"] || undefined,
    clientCertData,
    clientKeyData,
    token: user.token || undefined,
    tokenFile: user.token ? undefined : user.tokenFile,
    exec: user.exec,
    namespace: options.namespace || selected.namespace || "default",
    source: where,
  };
}
