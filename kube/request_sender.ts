/**
 * Sends one request to the API server the careful way, below the typed verbs (kube-rs's `Client`
 * under its `Api`): the client-side rate limit, the write fence right before each attempt, one
 * deadline for the whole call, retries of what may be retried, a new credential after a 401, and
 * a count of every answer.
 */
import { backoffDelayMs } from "../util/backoff.ts";
import { sleep } from "../util/sleep.ts";
import { endSpan, operatorTracer, SpanKind, withSpan } from "../util/tracer.ts";
import type { Answer } from "./answer.ts";
import { apiErrorFrom } from "./errors.ts";
import { NetworkError } from "./network_error.ts";
import type { RateLimiter } from "./rate_limiter.ts";
import type { RequestCounter } from "./request_counter.ts";
import type { RequestOptions } from "./request_options.ts";
import type { Transport } from "./transport.ts";
import type { WriteFence } from "./write_fence.ts";

/** One request: its options, query, body, and how it is sent. */
export interface RequestInit extends RequestOptions {
  /** Query parameters; undefined and empty values are left out. */
  query?: Record<string, string | number | boolean | undefined>;
  /** Sent as JSON. */
  body?: unknown;
  /** Default `application/json`. */
  contentType?: string;
  /** Overrides the sender's `maxRetries` for this request. */
  retries?: number;
  /** The `Accept` header; default `application/json`. */
  accept?: string;
}

/** What a sender is made of; a fenced or urgent view shares all of it but `fence` and `urgent`. */
export interface SenderParts {
  /** Sends the requests over the cluster's connections. */
  transport: Transport;
  /** Counts every answer and rate-limiter wait (the client's metrics read it). */
  requests: RequestCounter;
  /** The client-side rate limit every attempt waits on; none when absent. */
  limiter?: RateLimiter;
  /** Passed right before every attempt of every write. */
  fence?: WriteFence;
  /** Goes before others waiting for the rate limiter. */
  urgent: boolean;
  /** The `User-Agent` header of every request; Deno's default when absent. */
  userAgent?: string;
  /** Retries for 429s and for 5xx/network failures of idempotent requests; default 5. */
  maxRetries?: number;
  /** Told once per HTTP response (or `code` 0 when none came); `path` has no query string. */
  onResponse?: (sample: { method: string; code: number; host: string; path: string }) => void;
  /** Told of every write this view made (a fenced view's: one reconcile's), once it is answered. */
  onWrite?: (write: WriteSample) => void;
  /** Every write goes as a server-side dry run (`dryRun=All`): checked and answered, not stored. */
  dryRun?: boolean;
}

/** One write as a view saw it: the verb, the path without its query, and the answer's code. */
export interface WriteSample {
  /** The HTTP method, e.g. `PATCH`. */
  method: string;
  /** The request path, without its query string. */
  path: string;
  /** The HTTP status of the answer, or 0 when none came. */
  code: number;
  /** Sent as a server-side dry run: nothing was stored. */
  dryRun: boolean;
}

/**
 * The host of a server URL, parsed once per server: a view is made for every visit, and Deno's URL
 * parser is native code each call goes out to.
 */
const HOSTS = new Map<string, string>();
function hostOf(server: string): string {
  let host = HOSTS.get(server);
  if (host === undefined) HOSTS.set(server, host = new URL(server).host);
  return host;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const MAX_RETRY_AFTER_S = 32;
const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS"]);
/** Between retries: 100 ms doubling, capped at 5 s, with up to 20 % jitter. */
const RETRY_BACKOFF = { initialMs: 100, maxMs: 5_000, jitter: 0.2 };

/**
 * Sends requests through the rate limit, the write fence, one deadline and the retries (see the
 * module doc); `KubeClient`'s verbs are built on it.
 */
export class RequestSender {
  /** What it is made of; `with` makes a view that shares all of it. */
  readonly parts: Readonly<SenderParts>;
  readonly #host: string;

  /** A sender over `parts`, counting answers under the server's host. */
  constructor(parts: SenderParts) {
    this.parts = parts;
    this.#host = hostOf(parts.transport.config.server);
  }

  /** The same sender with another fence, urgency or write observer. */
  with(
    parts: Partial<Pick<SenderParts, "fence" | "urgent" | "onWrite" | "dryRun">>,
  ): RequestSender {
    return new RequestSender({ ...this.parts, ...parts });
  }

  /**
   * Sends a request and returns the parsed JSON body (or the text of a non-JSON one). Non-2xx
   * answers throw ApiError, no answer at all a NetworkError. 429s are retried for every verb (the
   * server did not act on them); 5xx and network failures only for GET, since a write may have
   * happened.
   */
  async request<T = unknown>(method: string, path: string, init: RequestInit = {}): Promise<T> {
    // A span of its own (a child of the reconcile's, when one is active), around Deno's fetch's.
    const span = operatorTracer().startSpan(`${method} ${resourceOf(path)}`, {
      kind: SpanKind.CLIENT,
      attributes: { "http.request.method": method, "url.path": path },
    });
    try {
      const response = await withSpan(span, () => this.send(method, path, init));
      span.setAttribute("http.response.status_code", response.status);
      const text = await response.text();
      endSpan(span);
      // Health endpoints answer in plain text ("ok"); everything else in JSON.
      const json = response.headers.get("content-type")?.includes("json");
      return (json && text ? JSON.parse(text) : text || undefined) as T;
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code === "number") span.setAttribute("http.response.status_code", code);
      endSpan(span, error);
      throw error;
    }
  }

  /** Sends a request for a stream (a watch): the `Response` once its headers are in. */
  send(method: string, path: string, init: RequestInit & { stream: true }): Promise<Response>;
  /** Sends a request and returns its answer, read whole. */
  send(method: string, path: string, init: RequestInit): Promise<Answer>;
  async send(
    method: string,
    path: string,
    init: RequestInit & { stream?: boolean },
  ): Promise<Answer> {
    const { transport, limiter, requests } = this.parts;
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(init.query ?? {})) {
      if (value !== undefined && value !== "") query.set(key, String(value));
    }
    const dryRun = query.get("dryRun") === "All" ||
      (this.parts.dryRun === true && !IDEMPOTENT.has(method));
    if (dryRun) query.set("dryRun", "All");
    const url = query.size ? `${path}?${query}` : path;
    const maxRetries = init.retries ?? this.parts.maxRetries ?? 5;
    const fence = IDEMPOTENT.has(method) ? undefined : this.parts.fence;
    // The timeout bounds the whole call, retries included; each attempt gets what is left.
    const timeoutMs = init.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const deadline = timeoutMs ? performance.now() + timeoutMs : Infinity;
    let reauthenticated = false;
    for (let attempt = 0;; attempt++) {
      if (limiter) {
        const seconds = await limiter.wait(init.signal, { urgent: this.parts.urgent });
        requests.recordWait({ verb: method, host: this.#host, seconds });
        // The budget went on waiting our turn, not on the connection: fail this request alone,
        // without sending it and without blaming (or replacing) a connection that works.
        if (performance.now() >= deadline) {
          throw new NetworkError(
            "timeout",
            `${method} ${path}: the ${
              timeoutMs / 1000
            } s budget was spent waiting for the client-side rate limit`,
          );
        }
      }
      // A plain record: fetch checks it once, where a Headers object is checked again as copied.
      const headers: Record<string, string> = { accept: init.accept ?? "application/json" };
      if (this.parts.userAgent) headers["user-agent"] = this.parts.userAgent;
      if (init.body !== undefined) headers["content-type"] = init.contentType ?? "application/json";
      let response: Answer;
      try {
        response = await transport.fetch(url, {
          method,
          headers,
          body: init.body === undefined ? undefined : JSON.stringify(init.body),
          signal: init.signal,
          timeoutMs: timeoutMs && Math.max(1, deadline - performance.now()),
          stream: init.stream,
          beforeSend: fence,
        });
      } catch (error) {
        if (!(error instanceof NetworkError)) throw error;
        this.#record(method, 0, path);
        // A write may have reached the server before the connection failed: only reads retry.
        const wait = backoffDelayMs(attempt, RETRY_BACKOFF);
        const late = performance.now() + wait >= deadline;
        if (!IDEMPOTENT.has(method) || attempt >= maxRetries || late) throw error;
        await sleep(wait, init.signal);
        if (init.signal?.aborted) throw init.signal.reason;
        continue;
      }
      this.#record(method, response.status, path);
      if (!IDEMPOTENT.has(method)) this.#wrote(method, response.status, path, dryRun);
      if (response.ok) return response;
      const error = await apiErrorFrom(response, { method, url });
      if (error.code === 401 && !reauthenticated && this.#hasRefreshableCredentials()) {
        reauthenticated = true;
        transport.invalidateCredentials();
        continue;
      }
      const retryable = error.code === 429 || (error.code >= 500 && IDEMPOTENT.has(method));
      if (!retryable || attempt >= maxRetries) throw error;
      const waitMs = error.retryAfterSeconds !== undefined
        ? Math.min(error.retryAfterSeconds, MAX_RETRY_AFTER_S) * 1000
        : backoffDelayMs(attempt, RETRY_BACKOFF);
      if (performance.now() + waitMs >= deadline) throw error;
      await sleep(waitMs, init.signal);
      if (init.signal?.aborted) throw init.signal.reason;
    }
  }

  #hasRefreshableCredentials(): boolean {
    const config = this.parts.transport.config;
    return Boolean(config.tokenFile || config.exec);
  }

  #wrote(method: string, code: number, path: string, dryRun: boolean): void {
    this.parts.onWrite?.({ method, path, code, dryRun });
  }

  #record(method: string, code: number, path: string): void {
    const sample = { method, code, host: this.#host };
    this.parts.requests.record(sample);
    this.parts.onResponse?.({ ...sample, path });
  }
}

/**
 * What a path is about, for a span's name: the resource (and subresource), without the API group,
 * namespace or object name, so that names stay few: `ptemplates/status`, `leases`.
 */
export function resourceOf(path: string): string {
  const parts = path.split("?")[0].split("/").filter(Boolean);
  // /api/v1/… or /apis/<group>/<version>/…
  let rest = parts[0] === "api" ? parts.slice(2) : parts[0] === "apis" ? parts.slice(3) : parts;
  if (rest[0] === "namespaces" && rest.length > 2) rest = rest.slice(2);
  if (!rest.length) return parts.join("/") || "/";
  const [resource, , subresource] = rest;
  return subresource ? `${resource}/${subresource}` : resource;
}
