/** A small Kubernetes API client on Deno's fetch: typed verbs, typed errors, bounded retries. */
import type { ObjectMeta } from "kubernetes-types/meta/v1.d.ts";
import type { ClusterConfig } from "./cluster_config.ts";
import { backoffDelayMs } from "../util/backoff.ts";
import { sleep } from "../util/sleep.ts";
import { ApiError, apiErrorFrom } from "./errors.ts";
import { NetworkError } from "./network_error.ts";
import { type RateLimit, RateLimiter } from "./rate_limiter.ts";
import { apiVersionOf, type Resource, resourcePath } from "./resource.ts";
import { Transport } from "./transport.ts";
import { type WatchEvent, watchEvents } from "./watch.ts";
import { bothFences, type WriteFence } from "./write_fence.ts";

/** Any Kubernetes object: typed metadata, the rest as the server sent it (kubernetes-types fit). */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
}

/** An object whose other fields are not typed; unknown fields are preserved through every verb. */
export interface Unstructured extends KubeObject {
  [key: string]: unknown;
}

/** A list response: one page of items and the token for the next. */
export interface ObjectList<T> {
  apiVersion?: string;
  kind?: string;
  metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  items: T[];
}

/** Options every request takes. */
export interface RequestOptions {
  signal?: AbortSignal;
  /**
   * Milliseconds before the request is abandoned (it alone fails; the connection is judged by
   * whether anything arrives on it, see ConnectionHealth); default 30 s, `0` for none. For a
   * watch it bounds the wait for the response headers (default 15 s).
   */
  timeoutMs?: number;
}

export interface ListOptions extends RequestOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  resourceVersion?: string;
}

export interface WatchOptions extends ListOptions {
  /** Server-side timeout; the server ends the watch cleanly after it (default 5–10 min, jittered). */
  timeoutSeconds?: number;
  sendInitialEvents?: boolean;
}

export interface WriteOptions extends RequestOptions {
  namespace?: string;
  subresource?: string;
  dryRun?: boolean;
  fieldManager?: string;
  /**
   * What the server does with fields the schema does not know: `Strict` refuses the request
   * (what kubectl asks for), `Warn` (the server's default) drops them with a Warning header.
   */
  fieldValidation?: "Strict" | "Warn" | "Ignore";
}

export interface ApplyOptions extends WriteOptions {
  fieldManager: string;
  force?: boolean;
}

export interface DeleteOptions extends RequestOptions {
  namespace?: string;
  propagationPolicy?: "Foreground" | "Background" | "Orphan";
  gracePeriodSeconds?: number;
  /** Only delete when the object still has this resourceVersion. */
  resourceVersion?: string;
  /** Only delete when the object is still this one (not a namesake made since). */
  uid?: string;
}

export interface ClientOptions {
  userAgent?: string;
  /**
   * Client-side rate limit for every request (`--kube-api-qps`, `--kube-api-burst`); none when
   * absent. Fenced views share their client's limiter.
   */
  rateLimit?: RateLimit;
  /** Retries for 429s and for 5xx/network failures of idempotent requests; default 5. */
  maxRetries?: number;
  /**
   * Called once per HTTP response (or `code` 0 when none came), e.g. to count writes per path in
   * tests. `path` has no query string.
   */
  onResponse?: (sample: { method: string; code: number; host: string; path: string }) => void;
}

const DEFAULT_TIMEOUT_MS = 30_000;
/** A watch's response headers come at once; waiting longer means the connection is dead. */
const WATCH_HEADERS_TIMEOUT_MS = 15_000;
const MAX_RETRY_AFTER_S = 32;
const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS"]);

/** Request counts by method and code (and host), as `rest_client_requests_total` reports them. */
export class RequestCounter {
  readonly #counts = new Map<string, number>();
  readonly #waitListeners = new Set<
    (sample: { verb: string; host: string; seconds: number }) => void
  >();

  /** Told how long each request waited for the rate limiter (`rest_client_rate_limiter_duration_seconds`). */
  onRateLimiterWait(
    listener: (sample: { verb: string; host: string; seconds: number }) => void,
  ): void {
    this.#waitListeners.add(listener);
  }

  recordWait(sample: { verb: string; host: string; seconds: number }): void {
    for (const listener of this.#waitListeners) listener(sample);
  }

  record(sample: { method: string; code: number; host: string }): void {
    const key = JSON.stringify([sample.code, sample.method, sample.host]);
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
  }

  /** Every (code, method, host) seen with its count. */
  samples(): { code: number; method: string; host: string; count: number }[] {
    return [...this.#counts].map(([key, count]) => {
      const [code, method, host] = JSON.parse(key);
      return { code, method, host, count };
    });
  }

  /** How many requests used `method` (any code); handy for "no writes happened" checks. */
  total(method?: string): number {
    return this.samples()
      .filter((s) => method === undefined || s.method === method)
      .reduce((sum, s) => sum + s.count, 0);
  }
}

/** What a fenced view shares with the client it came from; not part of the public options. */
const SHARED = Symbol("shared");
interface Shared {
  transport: Transport;
  requests: RequestCounter;
  limiter?: RateLimiter;
  fence?: WriteFence;
  urgent?: boolean;
}

/** One client per cluster identity; share it, and `close()` it when done. */
export class KubeClient {
  readonly transport: Transport;
  readonly requests: RequestCounter;
  readonly #options: ClientOptions;
  readonly #host: string;
  readonly #fence?: WriteFence;
  readonly #limiter?: RateLimiter;
  readonly #urgent: boolean;
  /** Views share the connection of the client they came from, which alone closes it. */
  readonly #view: boolean;

  constructor(config: ClusterConfig, options: ClientOptions = {}) {
    const shared = (options as { [SHARED]?: Shared })[SHARED];
    this.transport = shared?.transport ?? new Transport(config);
    this.requests = shared?.requests ?? new RequestCounter();
    this.#limiter = shared
      ? shared.limiter
      : options.rateLimit && new RateLimiter(options.rateLimit);
    this.#fence = shared?.fence;
    this.#urgent = shared?.urgent ?? false;
    this.#view = shared !== undefined;
    this.#options = options;
    this.#host = new URL(config.server).host;
  }

  /**
   * The same client (connection, counters, options) with every write passing `fence` first, after
   * any fence this client already has (the tighter deadline wins): what the runtime hands to work
   * that only a leader may do, or only while its caches are current. Reads and watches are not
   * fenced.
   */
  fenced(fence: WriteFence): KubeClient {
    return this.#derive({ fence: bothFences(this.#fence, fence), urgent: this.#urgent });
  }

  /**
   * The same client whose requests go before others waiting for the rate limiter (they still
   * count against it): for traffic with a deadline to keep, like lease renewals, which must not
   * queue behind a backlog of writes.
   */
  urgent(): KubeClient {
    return this.#derive({ fence: this.#fence, urgent: true });
  }

  #derive(parts: Pick<Shared, "fence" | "urgent">): KubeClient {
    const shared: Shared = {
      transport: this.transport,
      requests: this.requests,
      limiter: this.#limiter,
      ...parts,
    };
    const options: ClientOptions & { [SHARED]: Shared } = { ...this.#options, [SHARED]: shared };
    return new KubeClient(this.transport.config, options);
  }

  /** The default namespace of this identity's config. */
  get namespace(): string {
    return this.transport.config.namespace;
  }

  /** Closes the connection; a view leaves that to the client it came from. */
  close(): void {
    if (!this.#view) this.transport.close();
  }

  /**
   * Sends a request and returns the parsed JSON body (or the text of a non-JSON one). Non-2xx
   * answers throw ApiError, no answer at all a NetworkError. 429s are retried for every verb (the
   * server did not act on them); 5xx and network failures only for GET, since a write may have
   * happened.
   */
  async request<T = unknown>(
    method: string,
    path: string,
    init: RequestOptions & {
      query?: Record<string, string | number | boolean | undefined>;
      body?: unknown;
      contentType?: string;
      /** Overrides `ClientOptions.maxRetries` for this request. */
      retries?: number;
    } = {},
  ): Promise<T> {
    const response = await this.#send(method, path, init);
    const text = await response.text();
    // Health endpoints answer in plain text ("ok"); everything else in JSON.
    const json = response.headers.get("content-type")?.includes("json");
    return (json && text ? JSON.parse(text) : text || undefined) as T;
  }

  async get<T extends KubeObject = Unstructured>(
    resource: Resource,
    name: string,
    options: RequestOptions & { namespace?: string; subresource?: string } = {},
  ): Promise<T> {
    const path = resourcePath(resource, {
      namespace: this.#ns(resource, options.namespace),
      name,
      subresource: options.subresource,
    });
    return await this.request<T>("GET", path, options);
  }

  /** One page of a list; pass `continue` from the previous page's metadata for the next. */
  async list<T extends KubeObject = Unstructured>(
    resource: Resource,
    options: ListOptions = {},
  ): Promise<ObjectList<T>> {
    const path = resourcePath(resource, { namespace: options.namespace });
    return await this.request<ObjectList<T>>("GET", path, {
      ...options,
      query: {
        labelSelector: options.labelSelector,
        fieldSelector: options.fieldSelector,
        limit: options.limit,
        continue: options.continue,
        resourceVersion: options.resourceVersion,
      },
    });
  }

  /** Every item across all pages, and the resourceVersion of the list to watch from. */
  async listAll<T extends KubeObject = Unstructured>(
    resource: Resource,
    options: ListOptions = {},
  ): Promise<{ items: T[]; resourceVersion: string }> {
    const items: T[] = [];
    let page = await this.list<T>(resource, { limit: 500, ...options });
    items.push(...page.items);
    while (page.metadata.continue) {
      page = await this.list<T>(resource, {
        limit: 500,
        ...options,
        resourceVersion: undefined,
        continue: page.metadata.continue,
      });
      items.push(...page.items);
    }
    return { items, resourceVersion: page.metadata.resourceVersion ?? "" };
  }

  async create<T extends KubeObject>(
    resource: Resource,
    object: T,
    options: WriteOptions = {},
  ): Promise<T> {
    const path = resourcePath(resource, {
      namespace: this.#ns(resource, options.namespace ?? object.metadata?.namespace),
      name: options.subresource ? object.metadata?.name : undefined,
      subresource: options.subresource,
    });
    return await this.request<T>("POST", path, {
      ...options,
      query: this.#writeQuery(options),
      body: this.#withType(resource, object, options.subresource),
    });
  }

  /** Replaces the object; its `metadata.resourceVersion` makes this a compare-and-swap (409 when stale). */
  async update<T extends KubeObject>(
    resource: Resource,
    object: T,
    options: WriteOptions = {},
  ): Promise<T> {
    const path = this.#objectPath(resource, object, options);
    return await this.request<T>("PUT", path, {
      ...options,
      query: this.#writeQuery(options),
      body: this.#withType(resource, object, undefined),
    });
  }

  /** A JSON merge patch (RFC 7386): `null` deletes a field. */
  async patch<T extends KubeObject = Unstructured>(
    resource: Resource,
    name: string,
    patch: unknown,
    options: WriteOptions = {},
  ): Promise<T> {
    const path = resourcePath(resource, {
      namespace: this.#ns(resource, options.namespace),
      name,
      subresource: options.subresource,
    });
    return await this.request<T>("PATCH", path, {
      ...options,
      query: this.#writeQuery(options),
      body: patch,
      contentType: "application/merge-patch+json",
    });
  }

  /**
   * Server-side apply: the server merges `object` as owned by `fieldManager`; a field another
   * manager owns is a 409 FieldManagerConflict unless `force`.
   */
  async apply<T extends KubeObject>(
    resource: Resource,
    object: T,
    options: ApplyOptions,
  ): Promise<T> {
    const path = this.#objectPath(resource, object, options);
    return await this.request<T>("PATCH", path, {
      ...options,
      query: { ...this.#writeQuery(options), force: options.force || undefined },
      body: this.#withType(resource, object, undefined),
      contentType: "application/apply-patch+yaml",
    });
  }

  async delete(resource: Resource, name: string, options: DeleteOptions = {}): Promise<void> {
    const path = resourcePath(resource, { namespace: this.#ns(resource, options.namespace), name });
    const preconditions = options.resourceVersion || options.uid
      ? { resourceVersion: options.resourceVersion, uid: options.uid }
      : undefined;
    await this.request("DELETE", path, {
      ...options,
      body: {
        apiVersion: "v1",
        kind: "DeleteOptions",
        propagationPolicy: options.propagationPolicy,
        gracePeriodSeconds: options.gracePeriodSeconds,
        preconditions,
      },
    });
  }

  /**
   * Streams watch events from `resourceVersion` with bookmarks on. The stream ends cleanly when
   * the server closes it or `signal` aborts; `410 Gone` (as a response or an ERROR event) throws
   * an ApiError with code 410 so the caller relists.
   */
  async *watch<T extends KubeObject = Unstructured>(
    resource: Resource,
    options: WatchOptions = {},
  ): AsyncGenerator<WatchEvent<T>> {
    const path = resourcePath(resource, { namespace: options.namespace });
    const timeoutSeconds = options.timeoutSeconds ??
      Math.floor(300 + Math.random() * 300);
    let response: Response;
    try {
      response = await this.#send("GET", path, {
        ...options,
        timeoutMs: options.timeoutMs ?? WATCH_HEADERS_TIMEOUT_MS,
        stream: true,
        query: {
          watch: true,
          allowWatchBookmarks: true,
          resourceVersion: options.resourceVersion,
          labelSelector: options.labelSelector,
          fieldSelector: options.fieldSelector,
          timeoutSeconds,
          sendInitialEvents: options.sendInitialEvents,
          resourceVersionMatch: options.sendInitialEvents ? "NotOlderThan" : undefined,
        },
      });
    } catch (error) {
      if (options.signal?.aborted) return;
      throw error;
    }
    yield* watchEvents<T>(response, options.signal);
  }

  async #send(
    method: string,
    path: string,
    init: RequestOptions & {
      query?: Record<string, string | number | boolean | undefined>;
      body?: unknown;
      contentType?: string;
      retries?: number;
      stream?: boolean;
    },
  ): Promise<Response> {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(init.query ?? {})) {
      if (value !== undefined && value !== "") query.set(key, String(value));
    }
    const url = query.size ? `${path}?${query}` : path;
    const maxRetries = init.retries ?? this.#options.maxRetries ?? 5;
    const fence = IDEMPOTENT.has(method) ? undefined : this.#fence;
    // The timeout bounds the whole call, retries included; each attempt gets what is left.
    const timeoutMs = init.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const deadline = timeoutMs ? performance.now() + timeoutMs : Infinity;
    let reauthenticated = false;
    for (let attempt = 0;; attempt++) {
      if (this.#limiter) {
        const seconds = await this.#limiter.wait(init.signal, { urgent: this.#urgent });
        this.requests.recordWait({ verb: method, host: this.#host, seconds });
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
      const headers = new Headers({ accept: "application/json" });
      if (this.#options.userAgent) headers.set("user-agent", this.#options.userAgent);
      if (init.body !== undefined) {
        headers.set("content-type", init.contentType ?? "application/json");
      }
      let response: Response;
      try {
        response = await this.transport.fetch(url, {
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
      if (response.ok) return response;
      const error = await apiErrorFrom(response, { method, url });
      if (error.code === 401 && !reauthenticated && this.#hasRefreshableCredentials()) {
        reauthenticated = true;
        this.transport.invalidateCredentials();
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

  /** The path of `object` itself (or its subresource), in its namespace or the options'. */
  #objectPath(resource: Resource, object: KubeObject, options: WriteOptions): string {
    return resourcePath(resource, {
      namespace: this.#ns(resource, options.namespace ?? object.metadata?.namespace),
      name: this.#name(resource, object),
      subresource: options.subresource,
    });
  }

  #hasRefreshableCredentials(): boolean {
    const config = this.transport.config;
    return Boolean(config.tokenFile || config.exec);
  }

  #record(method: string, code: number, path: string): void {
    const sample = { method, code, host: this.#host };
    this.requests.record(sample);
    this.#options.onResponse?.({ ...sample, path });
  }

  #ns(resource: Resource, namespace: string | undefined): string | undefined {
    if (!resource.namespaced) return undefined;
    return namespace ?? this.namespace;
  }

  #name(resource: Resource, object: KubeObject): string {
    const name = object.metadata?.name;
    if (!name) throw new TypeError(`${resource.kind}: metadata.name is required for this verb`);
    return name;
  }

  #withType<T extends KubeObject>(resource: Resource, object: T, subresource?: string): T {
    if (subresource) return object;
    return { ...object, apiVersion: apiVersionOf(resource), kind: resource.kind };
  }

  #writeQuery(options: WriteOptions): Record<string, string | undefined> {
    return {
      fieldManager: options.fieldManager,
      dryRun: options.dryRun ? "All" : undefined,
      fieldValidation: options.fieldValidation,
    };
  }
}

/** Between retries: 100 ms doubling, capped at 5 s, with up to 20 % jitter. */
const RETRY_BACKOFF = { initialMs: 100, maxMs: 5_000, jitter: 0.2 };

export { ApiError };
export type { ObjectMeta, WriteFence };
