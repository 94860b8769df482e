/**
 * Parses one kubeconfig file and checks its shape field by field, so that a malformed one is
 * refused in our words, naming the file and the field (`users[0].user.token must be a string`),
 * never with JavaScript's ("object is not iterable") and never quoting a value: the file holds
 * credentials.
 */
import type { ExecConfig } from "./cluster_config.ts";

/** A kubeconfig that cannot be used; the message names the file, the entry and the fix. */
export class KubeconfigError extends Error {
  /** Always `KubeconfigError`. */
  override readonly name = "KubeconfigError";
  /** True when what was asked for on the command line is wrong (exit 2), not the environment. */
  readonly misuse: boolean;
  /** `misuse`: the command line asked for something the files do not have (exit 2). */
  constructor(message: string, options: { misuse?: boolean } = {}) {
    super(message);
    this.misuse = options.misuse ?? false;
  }
}

/** A cluster entry of a kubeconfig (`clusters[].cluster`), with kubectl's field names. */
export interface NamedCluster {
  /** The API server's URL, `https://host:port`. */
  server?: string;
  /** A file of PEM CA certificates the server's certificate must chain to. */
  "certificate-authority"?: string;
  /** The same, inline, base64-encoded; wins over `certificate-authority`. */
  "certificate-authority-data"?: string;
  /** Skip checking the server's certificate: refused, Deno cannot do that for one client. */
  "insecure-skip-tls-verify"?: boolean;
}
/** A user entry of a kubeconfig (`users[].user`), with kubectl's field names. */
export interface NamedUser {
  /** A file holding the PEM client certificate. */
  "client-certificate"?: string;
  /** The client certificate, inline, base64-encoded; wins over `client-certificate`. */
  "client-certificate-data"?: string;
  /** A file holding the client certificate's PEM private key. */
  "client-key"?: string;
  /** The private key, inline, base64-encoded; wins over `client-key`. */
  "client-key-data"?: string;
  /** A bearer token; wins over `tokenFile`. */
  token?: string;
  /**
   * A file holding a bearer token, read again each minute (a projected service-account token
   * rotates).
   */
  tokenFile?: string;
  /** A credential plugin that prints a token or certificate (`aws eks get-token`, …). */
  exec?: ExecConfig;
  /** Removed from Kubernetes clients; named only in the error that asks for an exec plugin. */
  "auth-provider"?: { name?: string };
  /**
   * Basic authentication's user name: checked to be a string, never sent (Kubernetes dropped basic
   * authentication).
   */
  username?: string;
}
export interface NamedContext {
  cluster?: string;
  user?: string;
  namespace?: string;
}

/** One file, checked: every entry of every list has a name and fields of the right types. */
export interface KubeconfigDocument {
  currentContext?: string;
  clusters: { name: string; cluster: NamedCluster }[];
  users: { name: string; user: NamedUser }[];
  contexts: { name: string; context: NamedContext }[];
}

type Kind = "string" | "boolean" | "mapping" | "list";

/** What a value is, in words; never the value itself. */
function kindOf(value: unknown): string {
  if (value === null) return "empty";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  if (typeof value === "number") return "a number";
  return `a ${typeof value}`;
}

function is(value: unknown, kind: Kind): boolean {
  switch (kind) {
    case "mapping":
      return typeof value === "object" && value !== null && !Array.isArray(value);
    case "list":
      return Array.isArray(value);
    case "string":
      return typeof value === "string";
    case "boolean":
      return typeof value === "boolean";
  }
}

const STRINGS = {
  cluster: ["server", "certificate-authority", "certificate-authority-data", "tls-server-name"],
  user: [
    "client-certificate",
    "client-certificate-data",
    "client-key",
    "client-key-data",
    "token",
    "tokenFile",
    "username",
    "password",
  ],
  context: ["cluster", "user", "namespace"],
} as const;

/**
 * npm:yaml prints every token it reads to the console when `LOG_TOKENS` or `LOG_STREAM` is set
 * (a debugging aid of the library), the service-account token included. Nothing here wants that,
 * so they are taken out of the environment before a kubeconfig is parsed.
 */
function silenceYamlDebugging(): void {
  for (const name of ["LOG_TOKENS", "LOG_STREAM"]) {
    try {
      if (Deno.env.get(name) !== undefined) Deno.env.delete(name);
    } catch {
      // Not permitted to read it: then npm:yaml cannot read it either.
    }
  }
}

/**
 * A kubeconfig's text as data. YAML's JSON form (what `kubeconfigYaml` writes) is read as JSON;
 * only other YAML loads the YAML parser, which then stays in memory for the process's life: an
 * operator in a pod (in-cluster credentials) or given a JSON kubeconfig never carries it.
 */
async function parseText(text: string): Promise<unknown> {
  if (text.trimStart().startsWith("{")) {
    try {
      return JSON.parse(text);
    } catch {
      // A YAML flow mapping ({apiVersion: v1, ...}): YAML's to read.
    }
  }
  silenceYamlDebugging();
  const { parse } = await import("yaml");
  return parse(text) ?? {};
}

/** Parses and checks one kubeconfig file's text. */
export async function readKubeconfig(text: string, path: string): Promise<KubeconfigDocument> {
  let doc: unknown;
  try {
    doc = await parseText(text);
  } catch (error) {
    // Never the parser's message: it quotes the offending line, which may hold a token.
    const { code, linePos } = error as {
      code?: string;
      linePos?: { line: number; col: number }[];
    };
    const at = linePos?.[0] ? ` at line ${linePos[0].line}, column ${linePos[0].col}` : "";
    throw new KubeconfigError(
      `${path} is not valid YAML${at}${code ? ` (${code})` : ""}; fix it, or point ` +
        `--kubeconfig or KUBECONFIG at another file`,
    );
  }
  const wrong = (field: string, expected: string, value: unknown) =>
    new KubeconfigError(
      `${path}: ${field} must be ${expected}, not ${kindOf(value)}; fix that field (kubectl ` +
        `config view shows the file's shape)`,
    );
  if (!is(doc, "mapping")) throw wrong("the file", "a mapping (a kubeconfig)", doc);
  const root = doc as Record<string, unknown>;
  const current = root["current-context"];
  if (current !== undefined && current !== null && !is(current, "string")) {
    throw wrong("current-context", "a string", current);
  }
  const list = <K extends "cluster" | "user" | "context">(key: `${K}s`, entry: K) => {
    const items = root[key] ?? [];
    if (!is(items, "list")) {
      throw wrong(key, `a list of entries with a name and a ${entry}`, items);
    }
    return (items as unknown[]).map((item, i) => {
      const at = `${key}[${i}]`;
      if (!is(item, "mapping")) throw wrong(at, `a mapping with name and ${entry}`, item);
      const { name, [entry]: body = {} } = item as Record<string, unknown>;
      if (!is(name, "string") || !name) throw wrong(`${at}.name`, "a non-empty string", name);
      if (!is(body, "mapping")) throw wrong(`${at}.${entry}`, "a mapping", body);
      for (const field of STRINGS[entry]) {
        const value = (body as Record<string, unknown>)[field];
        if (value !== undefined && value !== null && !is(value, "string")) {
          throw wrong(`${at}.${entry}.${field}`, "a string", value);
        }
      }
      return { name: name as string, body: body as Record<string, unknown>, at };
    });
  };
  const clusters = list("clusters", "cluster").map(({ name, body, at }) => {
    const insecure = body["insecure-skip-tls-verify"];
    if (insecure !== undefined && insecure !== null && !is(insecure, "boolean")) {
      throw wrong(`${at}.cluster.insecure-skip-tls-verify`, "true or false", insecure);
    }
    return { name, cluster: body as NamedCluster };
  });
  const users = list("users", "user").map(({ name, body, at }) => {
    const exec = body.exec;
    if (exec !== undefined && exec !== null) checkExec(exec, `${at}.user.exec`, wrong);
    const provider = body["auth-provider"];
    if (provider !== undefined && provider !== null && !is(provider, "mapping")) {
      throw wrong(`${at}.user.auth-provider`, "a mapping", provider);
    }
    return { name, user: body as NamedUser };
  });
  const contexts = list("contexts", "context").map(({ name, body }) => ({
    name,
    context: body as NamedContext,
  }));
  return {
    currentContext: (current as string | undefined) || undefined,
    clusters,
    users,
    contexts,
  };
}

function checkExec(
  exec: unknown,
  at: string,
  wrong: (field: string, expected: string, value: unknown) => KubeconfigError,
): void {
  if (!is(exec, "mapping")) throw wrong(at, "a mapping with a command", exec);
  const { command, args, env, apiVersion } = exec as Record<string, unknown>;
  if (!is(command, "string") || !command) {
    throw wrong(`${at}.command`, "a non-empty string", command);
  }
  if (apiVersion !== undefined && !is(apiVersion, "string")) {
    throw wrong(`${at}.apiVersion`, "a string", apiVersion);
  }
  if (args !== undefined && args !== null) {
    if (!is(args, "list")) throw wrong(`${at}.args`, "a list of strings", args);
    (args as unknown[]).forEach((arg, i) => {
      if (!is(arg, "string")) throw wrong(`${at}.args[${i}]`, "a string", arg);
    });
  }
  if (env !== undefined && env !== null) {
    if (!is(env, "list")) throw wrong(`${at}.env`, "a list of {name, value}", env);
    (env as unknown[]).forEach((item, i) => {
      if (!is(item, "mapping")) {
        throw wrong(`${at}.env[${i}]`, "a mapping with name and value", item);
      }
      const { name, value } = item as Record<string, unknown>;
      if (!is(name, "string") || !name) {
        throw wrong(`${at}.env[${i}].name`, "a non-empty string", name);
      }
      if (!is(value, "string")) throw wrong(`${at}.env[${i}].value`, "a string", value);
    });
  }
}
