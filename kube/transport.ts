/** Sends HTTP requests to one cluster: TLS from the config, and the credentials on every request. */
import { getLogger } from "@logtape/logtape";
import type { ClusterConfig } from "./cluster_config.ts";
import { ConnectionHealth } from "./connection_health.ts";
import {
  checkToken,
  CredentialError,
  MAX_TOKEN_BYTES,
  readCredentialFile,
} from "./credential_source.ts";
import { type ExecCredential, runExecPlugin } from "./exec_credential.ts";
import { NetworkError, networkErrorFrom } from "./network_error.ts";

const log = getLogger(["ptemplate", "client"]);

/** How long a token read from `tokenFile` is trusted before it is read again (client-go uses 1 min). */
const TOKEN_FILE_TTL_MS = 60_000;

/** One request as the client sends it. */
export interface Exchange {
  method: string;
  headers?: Headers;
  body?: string;
  /** The caller's cancellation; its abort is passed through unchanged. */
  signal?: AbortSignal;
  /**
   * Milliseconds for the whole exchange, headers and body; `0` for no limit. A request that gets
   * no answer in time means the connection is silent: it is replaced (see `reset`).
   */
  timeoutMs: number;
  /** A body the caller streams (a watch): the deadline covers the response headers only. */
  stream?: boolean;
  /**
   * Runs right before the request is sent, after credentials are ready. It may throw to stop the
   * request (the leader fence), or return a tighter deadline in milliseconds.
   */
  beforeSend?: () => number | void;
}

/**
 * A fetch bound to one cluster's TLS settings and identity. All requests share one HTTP/2
 * connection, which can die without a FIN or RST (a NAT or firewall that forgot it); nothing in
 * the runtime notices that, so every request carries a deadline, and the first one that passes
 * without an answer replaces the connection and fails everything still waiting on the old one.
 */
export class Transport {
  readonly config: ClusterConfig;
  /** Whether the server answers; shared by everything that uses this transport. */
  readonly health: ConnectionHealth = new ConnectionHealth();
  #client: Deno.HttpClient;
  /** Aborted when the connection is replaced: every request made on it ends at once. */
  #epoch = new AbortController();
  #fileToken?: { value: string; readAt: number };
  #exec?: { credential: ExecCredential; client?: Deno.HttpClient };
  #closed = false;

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
    this.#client = this.#httpClient(config.clientCertData, config.clientKeyData);
  }

  /**
   * Sends one request to `path` (with query) and returns the response, its body already read
   * unless `stream` is set. Failures without an HTTP answer throw a `NetworkError`; the caller's
   * own abort is rethrown as it came.
   */
  async fetch(pathAndQuery: string, exchange: Exchange): Promise<Response> {
    const headers = new Headers(exchange.headers);
    const exec = this.config.exec ? await this.#execCredential() : undefined;
    const token = exec ? exec.credential.token : await this.#token();
    if (token && !headers.has("authorization")) {
      try {
        headers.set("authorization", `Bearer ${token}`);
      } catch {
        // Its message quotes the header, token and all; the sources are checked, this is a guard.
        throw new CredentialError(
          `the token from ${this.config.source} cannot go in an HTTP header; it is not shown`,
        );
      }
    }
    const limit = exchange.beforeSend?.();
    const timeoutMs = typeof limit === "number"
      ? Math.max(1, exchange.timeoutMs ? Math.min(limit, exchange.timeoutMs) : limit)
      : exchange.timeoutMs;
    const epoch = this.#epoch;
    const deadline = new AbortController();
    const timer = timeoutMs ? setTimeout(() => deadline.abort(), timeoutMs) : undefined;
    const signals = [epoch.signal, deadline.signal];
    if (exchange.signal) signals.push(exchange.signal);
    try {
      const response = await fetch(this.config.server + pathAndQuery, {
        method: exchange.method,
        headers,
        body: exchange.body,
        signal: AbortSignal.any(signals),
        client: exec?.client ?? this.#client,
      });
      this.health.answered();
      if (exchange.stream) {
        clearTimeout(timer);
        return this.#watched(response);
      }
      const text = await response.text();
      return new Response(text || null, {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      });
    } catch (error) {
      if (exchange.signal?.aborted) throw exchange.signal.reason ?? error;
      if (epoch.signal.aborted) throw epoch.signal.reason;
      if (deadline.signal.aborted) {
        const seconds = Number((timeoutMs / 1000).toFixed(1));
        const silent = new NetworkError(
          "timeout",
          `no answer from ${this.config.server} within ${seconds} s`,
          { cause: error },
        );
        this.health.failed(silent);
        if (this.#epoch === epoch) this.reset(`a request got no answer within ${seconds} s`);
        throw silent;
      }
      const classified = networkErrorFrom(error, this.config.server);
      if (classified instanceof NetworkError) this.health.failed(classified);
      throw classified;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Replaces the connection: closes the HTTP client, opens a new one for later requests, and
   * fails every request and watch still using the old one (closing a Deno HttpClient alone leaves
   * a stream on a dead connection waiting forever).
   */
  reset(reason: string): void {
    if (this.#closed) return;
    const old = this.#epoch;
    this.#epoch = new AbortController();
    log.info("replacing the connection to {server}: {reason}", {
      server: this.config.server,
      reason,
    });
    old.abort(
      new NetworkError(
        "replaced",
        `the connection to ${this.config.server} was replaced: ${reason}`,
      ),
    );
    this.#client.close();
    this.#client = this.#httpClient(this.config.clientCertData, this.config.clientKeyData);
    if (this.#exec?.client) {
      this.#exec.client.close();
      const { clientCertificateData, clientKeyData } = this.#exec.credential;
      this.#exec.client = this.#httpClient(clientCertificateData, clientKeyData);
    }
  }

  /** Drops cached credentials so the next request reads or execs them anew (after a 401). */
  invalidateCredentials(): void {
    this.#fileToken = undefined;
    this.#exec?.client?.close();
    this.#exec = undefined;
  }

  close(): void {
    this.#closed = true;
    this.#epoch.abort(new NetworkError("replaced", "the client was closed"));
    this.#client.close();
    this.#exec?.client?.close();
  }

  #httpClient(cert: string | undefined, key: string | undefined): Deno.HttpClient {
    return Deno.createHttpClient({
      caCerts: this.config.caData ? [this.config.caData] : undefined,
      ...(cert && key ? { cert, key } : {}),
    });
  }

  /** The response with a body that counts every chunk as a sign of life. */
  #watched(response: Response): Response {
    if (!response.body) return response;
    const { health, config } = this;
    // Deno aborts a body through its Response: keep that alive with the reader, or a collected
    // Response leaves the stream running on after its signal aborted.
    const source = { response, reader: response.body.getReader() };
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const { done, value } = await source.reader.read();
          if (done) {
            controller.close();
          } else {
            health.answered();
            controller.enqueue(value);
          }
        } catch (error) {
          controller.error(networkErrorFrom(error, config.server));
        }
      },
      async cancel(reason) {
        await source.reader.cancel(reason).catch(() => {});
      },
    });
    return new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  }

  /** Runs the exec plugin unless its last credential is still valid (until `expirationTimestamp`). */
  async #execCredential(): Promise<{ credential: ExecCredential; client?: Deno.HttpClient }> {
    const cached = this.#exec;
    if (cached && (cached.credential.expiresAt ?? Infinity) > Date.now()) return cached;
    cached?.client?.close();
    const credential = await runExecPlugin(this.config.exec!, this.config.source);
    const client = credential.clientCertificateData && credential.clientKeyData
      ? this.#httpClient(credential.clientCertificateData, credential.clientKeyData)
      : undefined;
    this.#exec = { credential, client };
    return this.#exec;
  }

  async #token(): Promise<string | undefined> {
    if (this.config.token) return this.config.token;
    if (!this.config.tokenFile) return undefined;
    const now = Date.now();
    if (!this.#fileToken || now - this.#fileToken.readAt > TOKEN_FILE_TTL_MS) {
      const what = `the token file (from ${this.config.source})`;
      const value = (await readCredentialFile(this.config.tokenFile, what, {
        maxBytes: MAX_TOKEN_BYTES,
      })).trim();
      checkToken(value, `the token file ${this.config.tokenFile}`);
      this.#fileToken = { value, readAt: now };
    }
    return this.#fileToken.value;
  }
}
