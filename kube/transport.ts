/** Sends HTTP requests to one cluster: TLS from the config, and the credentials on every request. */
import type { ClusterConfig } from "./cluster_config.ts";

/** How long a token read from `tokenFile` is trusted before it is read again (client-go uses 1 min). */
const TOKEN_FILE_TTL_MS = 60_000;

/** A fetch bound to one cluster's TLS settings and identity. */
export class Transport {
  readonly config: ClusterConfig;
  readonly #client: Deno.HttpClient;
  #fileToken?: { value: string; readAt: number };

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
    const token = await this.#token();
    if (token && !headers.has("authorization")) headers.set("authorization", `Bearer ${token}`);
    return await fetch(this.config.server + pathAndQuery, {
      ...init,
      headers,
      client: this.#client,
    });
  }

  /** Drops cached credentials so the next request reads them anew (after a 401). */
  invalidateCredentials(): void {
    this.#fileToken = undefined;
  }

  close(): void {
    this.#client.close();
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
