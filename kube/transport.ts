/** Sends HTTP requests to one cluster: TLS from the config, and the credentials on every request. */
import { getLogger } from "@logtape/logtape";
import { setImmediate } from "node:timers";
import type { ClusterConfig } from "./cluster_config.ts";
import { monotonicMs } from "../util/clock.ts";
import { ownedChunkReader } from "../util/owned_chunks.ts";
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
 * A watchdog timer this late did not run because the process did not: the silence it would judge
 * may be ours, with answers waiting unread.
 */
const LATE_WATCHDOG_MS = 1_000;

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
 * A fetch bound to one cluster's TLS settings and identity. All requests share one HTTP/2
 * connection, which can die without a FIN or RST (a NAT or firewall that forgot it) and then
 * carry every later request into silence. So while anything waits on it, a watchdog asks the
 * health record what to do: after a few seconds of silence it asks the server for `/livez`, and
 * when nothing at all arrives after that either, it replaces the connection and fails everything
 * still waiting on the old one. A request past its own deadline fails alone: a slow server whose
 * answers still arrive keeps its connection.
 */
export class Transport {
  readonly config: ClusterConfig;
  /** Whether the server answers; shared by everything that uses this transport. */
  readonly health: ConnectionHealth = new ConnectionHealth();
  #client: Deno.HttpClient;
  /** Aborted when the connection is replaced: every request made on it ends at once. */
  #epoch = new AbortController();
  /** The watchdog's timer while anything waits on the connection. */
  #watchdog?: ReturnType<typeof setTimeout>;
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
    const epoch = this.#epoch;
    const deadline = new AbortController();
    const signals = [epoch.signal, deadline.signal];
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
        client: exec?.client ?? this.#client,
      });
    };
    const sentAt = monotonicMs();
    const close = this.health.open();
    this.#arm();
    let streaming = false;
    try {
      const response = await (exchange.beforeSend ? lastInTurn(send) : send());
      this.health.answered();
      if (exchange.stream) {
        clearTimeout(timer);
        streaming = true;
        return this.#watched(response, close);
      }
      const text = await response.text();
      this.health.answered();
      return new Response(text || null, {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      });
    } catch (error) {
      if (!passedFence) throw error;
      if (exchange.signal?.aborted) throw exchange.signal.reason ?? error;
      if (epoch.signal.aborted) throw epoch.signal.reason;
      if (deadline.signal.aborted) {
        const seconds = Number((timeoutMs / 1000).toFixed(1));
        const late = new NetworkError(
          "timeout",
          `no answer from ${this.config.server} within ${seconds} s`,
          { cause: error },
        );
        // This request alone fails. Only if nothing else arrived meanwhile does it say anything
        // about the server; the watchdog decides about the connection.
        if (this.health.silentSince(sentAt)) this.health.failed(late);
        throw late;
      }
      const classified = networkErrorFrom(error, this.config.server);
      if (classified instanceof NetworkError) this.health.failed(classified);
      throw classified;
    } finally {
      clearTimeout(timer);
      if (!streaming) close();
    }
  }

  /**
   * Replaces the connection: closes the HTTP client, opens a new one for later requests, and
   * fails every request and watch still using the old one (closing a Deno HttpClient alone leaves
   * a stream on a dead connection waiting forever), with `failure` (by default: "replaced").
   */
  reset(reason: string, failure?: NetworkError): void {
    if (this.#closed) return;
    const old = this.#epoch;
    this.#epoch = new AbortController();
    this.health.newConnection();
    log.info("replacing the connection to {server}: {reason}", {
      server: this.config.server,
      reason,
    });
    old.abort(
      failure ??
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
    clearTimeout(this.#watchdog);
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

  /**
   * Runs the watchdog while anything waits on the connection: asks `/livez` after a silence,
   * replaces the connection when that goes unanswered too (see ConnectionHealth).
   */
  #arm(): void {
    if (this.#watchdog !== undefined || this.#closed) return;
    const verdict = this.health.verdict();
    if (verdict.action === "wait" && verdict.checkInMs === undefined) return;
    const delay = verdict.action === "wait" ? Math.max(verdict.checkInMs!, 50) : 0;
    const due = monotonicMs() + delay;
    const timer = setTimeout(() => {
      this.#watchdog = undefined;
      this.#look(due);
    }, delay);
    Deno.unrefTimer(timer);
    this.#watchdog = timer;
  }

  #look(due: number): void {
    if (this.#closed) return;
    if (monotonicMs() - due > LATE_WATCHDOG_MS) {
      // This process did not run for a while (frozen, starved): what arrived meanwhile has not
      // been read yet. Read it before judging the connection by a silence that was our own.
      const timer = setTimeout(() => {
        this.#watchdog = undefined;
        this.#look(monotonicMs());
      }, 250);
      Deno.unrefTimer(timer);
      this.#watchdog = timer;
      return;
    }
    const verdict = this.health.verdict();
    if (verdict.action === "probe") {
      this.health.probeSent();
      // Any answer will do (even a 401): it is the connection that is asked, not the server.
      this.fetch("/livez", { method: "GET", timeoutMs: this.health.probeTimeoutMs + 1_000 })
        .catch(() => {});
    } else if (verdict.action === "replace") {
      const seconds = Math.round(verdict.silentMs / 1000);
      const reason = `nothing arrived on it for ${seconds} s, not even an answer to /livez`;
      // What was waiting on it got no answer: a timeout, as its own deadline would have said.
      const silent = new NetworkError(
        "timeout",
        `no answer from ${this.config.server} within ${seconds} s: nothing at all arrived on ` +
          `the connection, not even an answer to /livez, so it was replaced`,
      );
      this.health.failed(silent);
      this.reset(reason, silent);
    }
    this.#arm();
  }

  /** The response with a body that counts every chunk as a sign of life; `close` when it ends. */
  #watched(response: Response, close: () => void): Response {
    if (!response.body) {
      close();
      return response;
    }
    const { health, config } = this;
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
