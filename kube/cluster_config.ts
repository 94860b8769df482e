/** The resolved way to reach and authenticate to one cluster, whatever source it came from. */

/** An exec credential plugin as named by a kubeconfig user (`client.authentication.k8s.io/v1`). */
export interface ExecConfig {
  command: string;
  args?: string[];
  env?: { name: string; value: string }[];
  apiVersion?: string;
  /** Folder the command path is resolved against when it is relative (the kubeconfig's). */
  cwd?: string;
}

/**
 * Everything a client needs, in memory. Certificates and keys are PEM text; files named by a
 * kubeconfig are read when the config is loaded, except `tokenFile`, which is re-read because
 * bound service-account tokens rotate.
 */
export interface ClusterConfig {
  /** `https://host:port`, without a trailing slash. */
  server: string;
  caData?: string;
  /** Skip server certificate verification; only ever set because a kubeconfig asked for it. */
  insecureSkipTlsVerify?: boolean;
  clientCertData?: string;
  clientKeyData?: string;
  token?: string;
  tokenFile?: string;
  exec?: ExecConfig;
  /** The default namespace (the context's, the pod's, or `default`). */
  namespace: string;
  /** Where this came from, for logs and error messages; never contains secrets. */
  source: string;
}
