/**
 * Checks, before anything starts, that the API server can be reached and accepts our
 * credentials, and turns each way it can fail into one line: the server, the cause in plain
 * words, and the fix.
 */
import type { ClusterConfig } from "./cluster_config.ts";
import type { KubeClient } from "./client.ts";
import { ApiError } from "./errors.ts";
import { NetworkError } from "./network_error.ts";
import { CredentialError } from "./credential_source.ts";
import { StartupError } from "../util/startup_error.ts";

/** What to check about the credentials the API server refused. */
export function credentialHint(config: ClusterConfig): string {
  if (config.exec) {
    return `the token from exec credential plugin "${config.exec.command}" was not accepted: ` +
      `run it by hand to check that it prints a current token (you may need to log in again)`;
  }
  if (config.tokenFile) {
    return `the token in ${config.tokenFile} is not valid for this cluster, or has expired`;
  }
  if (config.token) {
    return `the token in ${config.source} is not valid for this cluster, or has expired: get ` +
      `a new one (for a ServiceAccount: kubectl create token <name> -n <namespace>)`;
  }
  if (config.clientCertData) {
    return `the client certificate in ${config.source} is not signed by this cluster's client ` +
      `CA, or has expired`;
  }
  return `${config.source} names no credentials (a token, a client certificate or an exec ` +
    `plugin); add some for its user`;
}

/** The RBAC rule that would allow a refused request, for the message that reports it. */
export function missingRule(
  group: string,
  resource: string,
  verbs: string[],
  namespace?: string,
): string {
  return `grant it: - apiGroups: ["${group}"] resources: ["${resource}"] verbs: [${
    verbs.map((v) => `"${v}"`).join(", ")
  }]${
    namespace
      ? ` in a Role in namespace ${namespace}`
      : " in a ClusterRole (or a Role in each namespace given with --namespace)"
  }`;
}

/**
 * Asks for `/version` (reachable?) and `/api` (are we someone?), each within `timeoutMs`; throws a
 * StartupError that says what is wrong. Returns the server's version.
 */
export async function preflight(
  client: KubeClient,
  options: { timeoutMs?: number } = {},
): Promise<string> {
  const config = client.transport.config;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const where = `the Kubernetes API server at ${config.server} (from ${config.source})`;
  const ask = async <T>(path: string): Promise<T> => {
    try {
      return await client.request<T>("GET", path, { timeoutMs, retries: 0 });
    } catch (error) {
      if (error instanceof NetworkError) {
        throw new StartupError(`cannot reach ${where}: ${error.message}`);
      }
      if (error instanceof CredentialError) throw new StartupError(error.message);
      throw error;
    }
  };
  // Credentials are checked before anything else: a bad one is a 401 even for /version.
  const refused = (error: ApiError) => {
    if (error.code === 401) {
      return new StartupError(
        `${where} refused our credentials (401 Unauthorized): ${credentialHint(config)}`,
      );
    }
    if (error.code === 403 && /system:anonymous/.test(error.message)) {
      return new StartupError(
        `${where} saw no credentials (we were system:anonymous): ${credentialHint(config)}`,
      );
    }
    return undefined;
  };
  let version: { gitVersion?: string };
  try {
    version = await ask<{ gitVersion?: string }>("/version");
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    const plainHttp = /HTTP request to an HTTPS server/i.test(error.message);
    throw refused(error) ?? new StartupError(
      plainHttp
        ? `${where} speaks HTTPS: use https:// in the server URL`
        : `${where} answered /version with ${error.code} ${error.reason}: is this address a ` +
          `Kubernetes API server?`,
    );
  }
  try {
    await ask("/api");
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    throw refused(error) ?? new StartupError(`${where} refused API discovery: ${error.message}`);
  }
  return version.gitVersion ?? "unknown";
}
