/** Sends HTTP requests to one cluster: TLS from the config, and the credentials on every request. */
import { getLogger } from "@logtape/logtape";
import { setImmediate } from "node:timers";
import type { ClusterConfig } from "./cluster_config.ts";
import { monotonicMs } from "../util/clock.ts";
import { ownedChunkReader } from "../util/owned_chunks.ts";
import { Connection } from "./connection.ts";
import { type Answer, ReadAnswer } from "./answer.ts";
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

/**
 * The most watches one connection carries. kube-apiserver lets a client have SERVER_STREAMS open
 * at once on one HTTP/2 connection; past that, Deno queues a new request until a stream ends, and
 * watches never end soon: on a connection full of watches a request would get no answer, nor
 * would the `/livez` that asks after the connection, which would then be taken for dead and
 * replaced with every watch on it. So watches go on connections of their own, this many each
 * (as Go's HTTP/2 client opens another connection at the server's limit), below the limit by a
 * margin for a server or proxy that allows fewer.
 */
export const STREAMS_PER_CONNECTION = 64;

/** How long a token read from `tokenFile` is trusted before it is read again (client-go uses 1 min). */
const TOKEN_FILE_TTL_MS = 60_000;

/** One request as the client sends it. */
export interface Exchange {
  /** The HTTP method. */
  method: string;
  /** Headers besides the credentials, which the transport adds; names in lower case. */
  headers?: Record<string, string>;
  /** The body, already serialized. */
  body?: string;
  /** The caller's cancellation; its abort is passed through unchanged. */
  signal?: AbortSignal;
  /**
   * Milliseconds for the whole exchange, headers and body; `0` for no limit. A request that gets
   * no answer in time fails alone: the connection is judged by whether anything arrives on it
   * (see ConnectionHealth), not by one slow answer.
   */
  timeoutMs: number;
  /** A body the caller streams (a watch): the deadline covers the response headers only. */
  stream?: boolean;
  /**
   * Runs right before the request is sent, after credentials are ready, at the end of the event
   * loop's turn (`lastInTurn`). It may throw to stop the request (the leader fence), or return a
   * tighter deadline in milliseconds.
   */
  beforeSend?: () => number | void;
}

/**
 * A fetch bound to one cluster's TLS settings and identity. Requests share one HTTP/2 connection
 * (the main one), as many at once as the server lets one connection carry (one stream kept for
 * `/livez`); watches go on connections of their own, STREAMS_PER_CONNECTION each, each closed
 * when its last watch ends, so that none waits behind another. A connection can die without
 * a FIN or RST (a NAT or firewall that forgot it) and then carry everything on it into silence.
 * So while anything waits on one, its watchdog asks its health record what to do: after a few
 * seconds of silence it asks the server for `/livez` on that connection, and when nothing at all
 * arrives after that either, it replaces the connection and fails everything still waiting on the
 * old one (see Connection). A request past its own deadline fails alone: a slow server whose
 * answers still arrive keeps its connection.
 */
export class Transport {
  /** The cluster: server, CA, credentials. */
  readonly config: ClusterConfig;
  /**
   * Whether the server answers, by the main connection (requests); shared by everything that uses
   * this transport. The watches' connections are judged with its timings.
   */
  readonly health: ConnectionHealth = new ConnectionHealth();
  readonly #main: Connection;
  /** The watches' connections, each holding up to STREAMS_PER_CONNECTION. */
  readonly #streamConnections: Connection[] = [];
  #fileToken?: { value: string; readAt: number };
  #exec?: { credential: ExecCredential; client?: Deno.HttpClient };
  #closed = false;
  #replaced = 0;

  /**
   * Refuses a server that is not http(s), `insecure-skip-tls-verify`, and a client certificate
   * without its key (or the other way round).
   */
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
    this.#main = this.#connection(this.health, (reason, failure) => {
      this.#replaced++;
      this.reset(reason, failure);
    });
  }

  /** How many connections carry this transport's requests and watches now (exec's aside). */
  get connections(): number {
    return 1 + this.#streamConnections.length;
  }

  /** How many connections were found dead (nothing arrived, not even `/livez`) and replaced. */
  get replaced(): number {
    return this.#replaced;
  }

  /**
   * The bearer token this configuration sends (its own, its file's, or its exec plugin's), for a
   * request to someone who checks it with the API server; undefined for a client certificate.
   */
  async bearerToken(): Promise<string | undefined> {
    const exec = this.config.exec ? await this.#execCredential() : undefined;
    return exec ? exec.credential.token : await this.#token();
  }

  /**
   * Sends one request for a stream (a watch) to `path` (with query): the `Response`, whose body
   * the caller reads. Failures without an HTTP answer throw a `NetworkError`; the caller's own
   * abort is rethrown as it came.
   */
  fetch(pathAndQuery: string, exchange: Exchange & { stream: true }): Promise<Response>;
  /**
   * Sends one request to `path` (with query) and returns its answer, read whole within the
   * deadline. Failures without an HTTP answer throw a `NetworkError`; the caller's own abort is
   * rethrown as it came.
   */
  fetch(pathAndQuery: string, exchange: Exchange): Promise<Answer>;
  async fetch(pathAndQuery: string, exchange: Exchange): Promise<Answer> {
    if (!exchange.stream) {
      const release = await this.#room(exchange);
      const waited = monotonicMs() - release.since;
      try {
        return await this.#send(this.#main, pathAndQuery, {
          ...exchange,
          timeoutMs: exchange.timeoutMs && Math.max(1, exchange.timeoutMs - waited),
        }, () => {});
      } finally {
        release();
      }
    }
    // The stream's place is taken now, before any await: watches started together spread out.
    const connection = this.#forStream();
    connection.streams++;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.#streamEnded(connection);
    };
    return await this.#send(connection, pathAndQuery, exchange, release).catch((error) => {
      release();
      throw error;
    });
  }

  /**
   * Waits for a stream of the main connection (see Connection.room), within the request's own
   * deadline: a request that finds them all taken for that long fails alone, unsent.
   */
  async #room(exchange: Exchange): Promise<(() => void) & { since: number }> {
    const since = monotonicMs();
    const free = this.#main.take();
    if (free) return Object.assign(free, { since });
    const deadline = exchange.timeoutMs ? AbortSignal.timeout(exchange.timeoutMs) : undefined;
    const signals = [exchange.signal, deadline].filter((s) => s !== undefined);
    try {
      const release = await this.#main.room(signals.length ? AbortSignal.any(signals) : undefined);
      return Object.assign(release, { since });
    } catch (error) {
      if (exchange.signal?.aborted || !deadline?.aborted) throw error;
      throw new NetworkError(
        "timeout",
        `no answer from ${this.config.server} within ${
          Number((exchange.timeoutMs / 1000).toFixed(1))
        } s: every stream of the connection was taken by requests before it`,
      );
    }
  }

  /** The connection a new stream goes on: the first with room, or a new one. */
  #forStream(): Connection {
    const free = this.#streamConnections.find((c) => c.streams < STREAMS_PER_CONNECTION);
    if (free) return free;
    const health = new ConnectionHealth();
    health.follow(this.health);
    const connection: Connection = this.#connection(health, (reason, failure) => {
      this.#replaced++;
      connection.renew(reason, failure);
    });
    this.#streamConnections.push(connection);
    log.debug("watches on {connections} connections to {server}", {
      connections: this.connections,
      server: this.config.server,
    });
    return connection;
  }

  /** A stream ended: a connection for streams with none left is closed. */
  #streamEnded(connection: Connection): void {
    connection.streams--;
    if (connection.streams > 0) return;
    const at = this.#streamConnections.indexOf(connection);
    if (at < 0) return;
    this.#streamConnections.splice(at, 1);
    connection.close();
  }

  /**
   * Sends on `connection`; `release` is called when a stream's body ends (or it fails). An exec
   * plugin's client certificate has a connection of its own, which carries everything.
   */
  async #send(
    connection: Connection,
    pathAndQuery: string,
    exchange: Exchange,
    release: () => void,
  ): Promise<Answer> {
    const headers = { ...exchange.headers };
    const exec = this.config.exec ? await this.#execCredential() : undefined;
    const token = exec ? exec.credential.token : await this.#token();
    if (token && headers.authorization === undefined) {
      // fetch's refusal would quote the header, token and all; the sources check every token
      // (checkToken), this is a guard.
      if (/[^\x21-\x7e]/.test(token)) {
        throw new CredentialError(
          `the token from ${this.config.source} cannot go in an HTTP header; it is not shown`,
        );
      }
      headers.authorization = `Bearer ${token}`;
    }
    const epoch = connection.epoch;
    const health = connection.health;
    const deadline = new AbortController();
    const signals = [epoch, deadline.signal];
    if (exchange.signal) signals.push(exchange.signal);
    const signal = AbortSignal.any(signals);
    let timeoutMs = exchange.timeoutMs;
    let timer: ReturnType<typeof setTimeout> | undefined;
    /** Set once `beforeSend` let the request go: what failed before that is its refusal. */
    let passedFence = false;
    const send = () => {
      const limit = exchange.beforeSend?.();
      passedFence = true;
      if (typeof limit === "number") {
        timeoutMs = Math.max(1, timeoutMs ? Math.min(limit, timeoutMs) : limit);
      }
      if (timeoutMs) timer = setTimeout(() => deadline.abort(), timeoutMs);
      return fetch(this.config.server + pathAndQuery, {
        method: exchange.method,
        headers,
        body: exchange.body,
        signal,
        client: exec?.client ?? connection.client,
      });
    };
    const sentAt = monotonicMs();
    const opened = health.open();
    const close = () => {
      opened();
      release();
    };
    connection.arm();
    let streaming = false;
    try {
      const response = await (exchange.beforeSend ? lastInTurn(send) : send());
      health.answered();
      if (exchange.stream) {
        clearTimeout(timer);
        streaming = true;
        return this.#watched(response, health, close);
      }
      const text = await response.text();
      health.answered();
      return new ReadAnswer(response.status, response.statusText, response.headers, text);
    } catch (error) {
      if (!passedFence) throw error;
      if (exchange.signal?.aborted) throw exchange.signal.reason ?? error;
      if (epoch.aborted) throw epoch.reason;
      if (deadline.signal.aborted) {
        const seconds = Number((timeoutMs / 1000).toFixed(1));
        const late = new NetworkError(
          "timeout",
          `no answer from ${this.config.server} within ${seconds} s`,
          { cause: error },
        );
        // This request alone fails. Only if nothing else arrived meanwhile does it say anything
        // about the server; the watchdog decides about the connection.
        if (health.silentSince(sentAt)) health.failed(late);
        throw late;
      }
      const classified = networkErrorFrom(error, this.config.server);
      if (classified instanceof NetworkError) health.failed(classified);
      throw classified;
    } finally {
      clearTimeout(timer);
      if (!streaming) close();
    }
  }

  /**
   * Replaces the main connection: closes its HTTP client, opens a new one for later requests, and
   * fails every request and watch still using the old one, with `failure` (by default:
   * "replaced"); see Connection.renew. An exec plugin's client-certificate connection goes too.
   */
  reset(reason: string, failure?: NetworkError): void {
    if (this.#closed) return;
    this.#main.renew(reason, failure);
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

  /** Closes every connection, failing what waits on them; the transport sends nothing after. */
  close(): void {
    this.#closed = true;
    this.#main.close();
    for (const connection of this.#streamConnections.splice(0)) connection.close();
    this.#exec?.client?.close();
  }

  #httpClient(cert: string | undefined, key: string | undefined): Deno.HttpClient {
    return Deno.createHttpClient({
      caCerts: this.config.caData ? [this.config.caData] : undefined,
      ...(cert && key ? { cert, key } : {}),
    });
  }

  /** A connection with the config's TLS and client certificate, probed through this transport. */
  #connection(
    health: ConnectionHealth,
    replace?: (reason: string, failure: NetworkError) => void,
  ): Connection {
    return new Connection({
      server: this.config.server,
      open: () => this.#httpClient(this.config.clientCertData, this.config.clientKeyData),
      health,
      replace,
      // Any answer will do (even a 401): it is the connection that is asked, not the server.
      probe: (connection) =>
        void this.#send(connection, "/livez", {
          method: "GET",
          timeoutMs: health.probeTimeoutMs + 1_000,
        }, () => {}).catch(() => {}),
    });
  }

  /** The response with a body that counts every chunk as a sign of life; `close` when it ends. */
  #watched(response: Response, health: ConnectionHealth, close: () => void): Response {
    if (!response.body) {
      close();
      return response;
    }
    const { config } = this;
    // Deno aborts a body through its Response: keep that alive with the reader, or a collected
    // Response leaves the stream running on after its signal aborted.
    const source = { response, reader: ownedChunkReader(response.body) };
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const { done, value } = await source.reader.read();
          if (done) {
            close();
            controller.close();
          } else {
            health.answered();
            controller.enqueue(value);
          }
        } catch (error) {
          close();
          controller.error(networkErrorFrom(error, config.server));
        }
      },
      async cancel(reason) {
        close();
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

/**
 * Runs `send` (a fenced request: its check, then the send) at the end of the event loop's current
 * turn. A request leaves only when a turn has ended, so a process frozen or starved between the
 * check and that moment sends its request late, after another may have taken over. A check made
 * in the middle of a turn leaves the rest of the turn's work as that window: the answers and
 * timers still to handle, the visits they run. Deno runs `setImmediate` callbacks last in a turn,
 * after those (as libuv's check phase; a timer would run first), so the window is only the other
 * fenced sends due at that moment. A freeze before the check is seen by it: the clocks the fence
 * reads run on through a freeze.
 */
function lastInTurn<T>(send: () => Promise<T>): Promise<T> {
  return new Promise((resolve, reject) =>
    setImmediate(() => {
      try {
        resolve(send());
      } catch (error) {
        reject(error);
      }
    })
  );
}
