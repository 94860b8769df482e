/** The resolved way to reach and authenticate to one cluster, whatever source it came from. */

/** An exec credential plugin as named by a kubeconfig user (`client.authentication.k8s.io/v1`). */
export interface ExecConfig {
  /** The program to run (a path, or a name on `PATH`). */
  command: string;
  /** Its arguments. */
  args?: string[];
  /** Environment variables to add to its own. */
  env?: { name: string; value: string }[];
  /** The ExecCredential version it speaks, e.g. `client.authentication.k8s.io/v1`. */
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
  /** The CA certificate(s) that sign the API server's certificate, PEM. */
  caData?: string;
  /** Skip server certificate verification; only ever set because a kubeconfig asked for it. */
  insecureSkipTlsVerify?: boolean;
  /** A client certificate, PEM. */
  clientCertData?: string;
  /** Its private key, PEM (RSA or EC). */
  clientKeyData?: string;
  /** A bearer token. */
  token?: string;
  /** A file holding a bearer token, read again every minute (bound tokens rotate). */
  tokenFile?: string;
  /** An exec credential plugin that prints a token (cached until it expires). */
  exec?: ExecConfig;
  /** The default namespace (the context's, the pod's, or `default`). */
  namespace: string;
  /** Where this came from, for logs and error messages; never contains secrets. */
  source: string;
}
