/** Sends HTTP requests to one cluster: TLS from the config, and the credentials on every request. */
import type { ClusterConfig, ExecConfig } from "./cluster_config.ts";

/** How long a token read from `tokenFile` is trusted before it is read again (client-go uses 1 min). */
const TOKEN_FILE_TTL_MS = 60_000;

/** What an exec credential plugin printed (`ExecCredential.status`). */
interface ExecCredential {
  token?: string;
  clientCertificateData?: string;
  clientKeyData?: string;
  /** Local time (ms) after which it must be fetched again; undefined means never. */
  expiresAt?: number;
}

/** A fetch bound to one cluster's TLS settings and identity. */
export class Transport {
  readonly config: ClusterConfig;
  readonly #client: Deno.HttpClient;
  #fileToken?: { value: string; readAt: number };
  #exec?: { credential: ExecCredential; client?: Deno.HttpClient };

  constructor(config: ClusterConfig) {
    if (!/^https?:\/\//.test(config.server)) {
      throw new TypeError(
        `cluster server "${config.server}" (from ${config.source}) must start with https:// or http://`,
      );
    }
    if (config.insecureSkipTlsVerify) {
      // Deno's fetch has no per-client switch to skip verification; only the process-wide
      // --unsafely-ignore-certificate-errors flag does it. Say so instead of failing on first use.
      throw new TypeError(
        `${config.source} sets insecure-skip-tls-verify, which Deno cannot honour per client: ` +
          `set certificate-authority(-data) for the cluster instead, or run with ` +
          `--unsafely-ignore-certificate-errors=<host>`,
      );
    }
    if (Boolean(config.clientCertData) !== Boolean(config.clientKeyData)) {
      throw new TypeError(
        `${config.source}: a client certificate needs both its certificate and its key`,
      );
    }
    this.config = config;
    this.#client = Deno.createHttpClient({
      caCerts: config.caData ? [config.caData] : undefined,
      ...(config.clientCertData && config.clientKeyData
        ? { cert: config.clientCertData, key: config.clientKeyData }
        : {}),
    });
  }

  /** Sends one request to `path` (with query) on the cluster, adding the bearer token if any. */
  async fetch(pathAndQuery: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    const exec = this.config.exec ? await this.#execCredential() : undefined;
    const token = exec ? exec.credential.token : await this.#token();
    if (token && !headers.has("authorization")) headers.set("authorization", `Bearer ${token}`);
    return await fetch(this.config.server + pathAndQuery, {
      ...init,
      headers,
      client: exec?.client ?? this.#client,
    });
  }

  /** Drops cached credentials so the next request reads or execs them anew (after a 401). */
  invalidateCredentials(): void {
    this.#fileToken = undefined;
    this.#exec?.client?.close();
    this.#exec = undefined;
  }

  close(): void {
    this.#client.close();
    this.#exec?.client?.close();
  }

  /** Runs the exec plugin unless its last credential is still valid (until `expirationTimestamp`). */
  async #execCredential(): Promise<{ credential: ExecCredential; client?: Deno.HttpClient }> {
    const cached = this.#exec;
    if (cached && (cached.credential.expiresAt ?? Infinity) > Date.now()) return cached;
    cached?.client?.close();
    const credential = await runExecPlugin(this.config.exec!, this.config.source);
    const client = credential.clientCertificateData && credential.clientKeyData
      ? Deno.createHttpClient({
        caCerts: this.config.caData ? [this.config.caData] : undefined,
        cert: credential.clientCertificateData,
        key: credential.clientKeyData,
      })
      : undefined;
    this.#exec = { credential, client };
    return this.#exec;
  }

  async #token(): Promise<string | undefined> {
    if (this.config.token) return this.config.token;
    if (!this.config.tokenFile) return undefined;
    const now = Date.now();
    if (!this.#fileToken || now - this.#fileToken.readAt > TOKEN_FILE_TTL_MS) {
      const value = (await Deno.readTextFile(this.config.tokenFile)).trim();
      this.#fileToken = { value, readAt: now };
    }
    return this.#fileToken.value;
  }
}

/**
 * Runs a `client.authentication.k8s.io/v1` exec plugin non-interactively and reads the
 * ExecCredential it prints. Its stderr is passed through, since plugins explain failures there.
 */
async function runExecPlugin(exec: ExecConfig, source: string): Promise<ExecCredential> {
  const apiVersion = exec.apiVersion ?? "client.authentication.k8s.io/v1";
  const env: Record<string, string> = {
    KUBERNETES_EXEC_INFO: JSON.stringify({
      apiVersion,
      kind: "ExecCredential",
      spec: { interactive: false },
    }),
  };
  for (const { name, value } of exec.env ?? []) env[name] = value;
  let output: Deno.CommandOutput;
  try {
    output = await new Deno.Command(exec.command, {
      args: exec.args ?? [],
      env,
      cwd: exec.cwd,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
  } catch (error) {
    throw new Error(
      `exec credential plugin "${exec.command}" (from ${source}) could not be started: ` +
        `${(error as Error).message}`,
    );
  }
  const stderr = new TextDecoder().decode(output.stderr).trim();
  if (!output.success) {
    throw new Error(
      `exec credential plugin "${exec.command}" (from ${source}) exited with ${output.code}` +
        (stderr ? `: ${stderr}` : ""),
    );
  }
  let status: Record<string, string | undefined>;
  try {
    const parsed = JSON.parse(new TextDecoder().decode(output.stdout));
    if (parsed.kind !== "ExecCredential") throw new Error(`kind is ${parsed.kind}`);
    status = parsed.status ?? {};
  } catch (error) {
    throw new Error(
      `exec credential plugin "${exec.command}" (from ${source}) did not print an ` +
        `ExecCredential: ${(error as Error).message}`,
    );
  }
  if (!status.token && !(status.clientCertificateData && status.clientKeyData)) {
    throw new Error(
      `exec credential plugin "${exec.command}" (from ${source}) printed neither a token ` +
        `nor a client certificate and key`,
    );
  }
  const expiresAt = status.expirationTimestamp ? Date.parse(status.expirationTimestamp) : undefined;
  return {
    token: status.token,
    clientCertificateData: status.clientCertificateData,
    clientKeyData: status.clientKeyData,
    expiresAt: Number.isNaN(expiresAt) ? undefined : expiresAt,
  };
}
