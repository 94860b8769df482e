/**
 * Finds how to reach the cluster: `--kubeconfig`, else `$KUBECONFIG` (merged), else in-cluster,
 * else `~/.kube/config`, the order controller-runtime uses.
 */
import type { ClusterConfig } from "./cluster_config.ts";
import { MAX_TOKEN_BYTES, readCredentialFile } from "./credential_source.ts";
import {
  clusterConfigFrom,
  KubeconfigError,
  type KubeconfigSource,
  selectContext,
} from "./kubeconfig.ts";

/** Where a pod's service-account credentials are mounted. */
export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/** Where to look for the cluster's configuration, as kubectl's flags say it. */
export interface LoadOptions {
  /** `--kubeconfig`: one file, which must exist. */
  kubeconfig?: string;
  /** `--context`: overrides `current-context`. */
  context?: string;
  /** Overrides the context's (or the pod's) namespace. */
  namespace?: string;
  /** For tests: the environment and the service-account folder. */
  env?: (name: string) => string | undefined;
  /** Where a pod's service-account token, CA and namespace are mounted (tests point it elsewhere). */
  serviceAccountDir?: string;
}

/** A file's text within a size limit (see readCredentialFile), or undefined when it is not there. */
async function readIfExists(
  path: string,
  what: string,
  maxBytes?: number,
): Promise<string | undefined> {
  try {
    await Deno.stat(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
  }
  return await readCredentialFile(path, what, {
    maxBytes,
    fail: (message) => new KubeconfigError(message),
  });
}

/** In-cluster config from the service host/port and the mounted token, CA and namespace. */
export async function inClusterConfig(
  options: LoadOptions = {},
): Promise<ClusterConfig | undefined> {
  const env = options.env ?? ((name) => Deno.env.get(name));
  const host = env("KUBERNETES_SERVICE_HOST");
  const port = env("KUBERNETES_SERVICE_PORT");
  if (!host || !port) return undefined;
  const dir = options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  const caData = await readIfExists(`${dir}/ca.crt`, "the service-account CA");
  const token = await readIfExists(`${dir}/token`, "the service-account token", MAX_TOKEN_BYTES);
  if (!caData || token === undefined) {
    throw new KubeconfigError(
      `KUBERNETES_SERVICE_HOST is set but ${dir}/token or ca.crt is missing: mount the ` +
        `service-account token (automountServiceAccountToken: true) or pass --kubeconfig`,
    );
  }
  const namespace = (await readIfExists(`${dir}/namespace`, "the service-account namespace"))
    ?.trim();
  return {
    server: `https://${host.includes(":") ? `[${host}]` : host}:${port}`,
    caData,
    // Re-read, because bound service-account tokens rotate (hourly by default).
    tokenFile: `${dir}/token`,
    namespace: options.namespace || namespace || "default",
    source: `in-cluster service account (${dir})`,
  };
}

/** The cluster config, or one error that lists everything tried and how to fix it. */
export async function loadClusterConfig(options: LoadOptions = {}): Promise<ClusterConfig> {
  const env = options.env ?? ((name) => Deno.env.get(name));
  const tried: string[] = [];
  const fromFiles = async (paths: string[], required: boolean) => {
    const sources: KubeconfigSource[] = [];
    for (const path of paths) {
      const text = await readIfExists(path, "the kubeconfig");
      if (text === undefined) {
        if (required) {
          throw new KubeconfigError(`--kubeconfig ${path}: file not found`, { misuse: true });
        }
        continue;
      }
      sources.push({ path, text });
    }
    if (!sources.length) return undefined;
    return await clusterConfigFrom(await selectContext(sources, options), options);
  };

  if (options.kubeconfig) return (await fromFiles([options.kubeconfig], true))!;
  tried.push("--kubeconfig (not given)");

  const list = env("KUBECONFIG");
  if (list) {
    const paths = list.split(":").filter(Boolean);
    const config = await fromFiles(paths, false);
    if (config) return config;
    tried.push(`$KUBECONFIG (${paths.join(", ")}: none of the files exist)`);
  } else {
    tried.push("$KUBECONFIG (unset)");
  }

  const inCluster = await inClusterConfig(options);
  if (inCluster) return inCluster;
  tried.push("in-cluster (KUBERNETES_SERVICE_HOST/PORT unset)");

  const home = env("HOME");
  if (home) {
    const config = await fromFiles([`${home}/.kube/config`], false);
    if (config) return config;
    tried.push(`${home}/.kube/config (missing)`);
  } else {
    tried.push("~/.kube/config ($HOME unset)");
  }

  throw new KubeconfigError(
    `no Kubernetes cluster configuration found; tried ${tried.join(", ")}. ` +
      `Pass --kubeconfig <file>, set KUBECONFIG, or run \`deno task cluster\` for a local one.`,
  );
}
