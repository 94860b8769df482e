/**
 * Reads kubeconfig files the way kubectl does (several files merged, first definition wins,
 * paths relative to the file that names them) into a ClusterConfig.
 */
import { parse } from "yaml";
import type { ClusterConfig, ExecConfig } from "./cluster_config.ts";

/** One kubeconfig file's text and where it came from. */
export interface KubeconfigSource {
  path: string;
  text: string;
}

interface NamedCluster {
  server?: string;
  "certificate-authority"?: string;
  "certificate-authority-data"?: string;
  "insecure-skip-tls-verify"?: boolean;
}
interface NamedUser {
  "client-certificate"?: string;
  "client-certificate-data"?: string;
  "client-key"?: string;
  "client-key-data"?: string;
  token?: string;
  tokenFile?: string;
  exec?: ExecConfig;
  "auth-provider"?: { name?: string };
  username?: string;
}
interface NamedContext {
  cluster?: string;
  user?: string;
  namespace?: string;
}

/** What was picked from the merged files, with every path already absolute. */
export interface SelectedContext {
  contextName: string;
  clusterName: string;
  userName: string;
  cluster: NamedCluster;
  user: NamedUser;
  namespace?: string;
  /** The files that were merged, in order. */
  files: string[];
}

/** A kubeconfig that cannot be used; the message names the file, the entry and the fix. */
export class KubeconfigError extends Error {
  override readonly name = "KubeconfigError";
  /** True when what was asked for on the command line is wrong (exit 2), not the environment. */
  readonly misuse: boolean;
  constructor(message: string, options: { misuse?: boolean } = {}) {
    super(message);
    this.misuse = options.misuse ?? false;
  }
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
export function selectContext(
  sources: KubeconfigSource[],
  options: { context?: string } = {},
): SelectedContext {
  const clusters = new Map<string, NamedCluster>();
  const users = new Map<string, NamedUser>();
  const contexts = new Map<string, NamedContext>();
  let current: string | undefined;
  for (const source of sources) {
    let doc: Record<string, unknown>;
    try {
      doc = (parse(source.text) ?? {}) as Record<string, unknown>;
    } catch (error) {
      // Never the parser's message: it quotes the offending line, which may hold a token.
      const { code, linePos } = error as {
        code?: string;
        linePos?: { line: number; col: number }[];
      };
      const at = linePos?.[0] ? ` at line ${linePos[0].line}, column ${linePos[0].col}` : "";
      throw new KubeconfigError(
        `${source.path} is not valid YAML${at}${code ? ` (${code})` : ""}; fix it, or point ` +
          `--kubeconfig or KUBECONFIG at another file`,
      );
    }
    if (typeof doc !== "object" || Array.isArray(doc)) {
      throw new KubeconfigError(`${source.path} is not a kubeconfig (expected a mapping)`);
    }
    const base = dirname(source.path);
    current ||= (doc["current-context"] as string | undefined) || undefined;
    for (const item of (doc.clusters ?? []) as { name: string; cluster: NamedCluster }[]) {
      if (item?.name && !clusters.has(item.name)) {
        clusters.set(item.name, resolvePaths("cluster", item.cluster ?? {}, base));
      }
    }
    for (const item of (doc.users ?? []) as { name: string; user: NamedUser }[]) {
      if (item?.name && !users.has(item.name)) {
        users.set(item.name, resolvePaths("user", item.user ?? {}, base));
      }
    }
    for (const item of (doc.contexts ?? []) as { name: string; context: NamedContext }[]) {
      if (item?.name && !contexts.has(item.name)) contexts.set(item.name, item.context ?? {});
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

async function readPem(path: string, what: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch (error) {
    throw new KubeconfigError(`cannot read ${what} ${path}: ${(error as Error).message}`);
  }
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
    ? await readPem(cluster["certificate-authority"], "certificate-authority")
    : undefined;
  const clientCertData = user["client-certificate-data"]
    ? decodeBase64(user["client-certificate-data"], `${where}: client-certificate-data`)
    : user["client-certificate"]
    ? await readPem(user["client-certificate"], "client-certificate")
    : undefined;
  const clientKeyData = user["client-key-data"]
    ? decodeBase64(user["client-key-data"], `${where}: client-key-data`)
    : user["client-key"]
    ? await readPem(user["client-key"], "client-key")
    : undefined;
  if (Boolean(clientCertData) !== Boolean(clientKeyData)) {
    throw new KubeconfigError(
      `${where}: user "${selected.userName}" has a client ${
        clientCertData ? "certificate but no key" : "key but no certificate"
      }; set both client-certificate(-data) and client-key(-data)`,
    );
  }
  return {
    server: cluster.server!.replace(/\/+$/, ""),
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
