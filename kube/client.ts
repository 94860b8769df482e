/**
 * The Kubernetes client: one per cluster identity, with the typed verbs (get, list, watch,
 * create, apply, patch, delete) over a request sender that rate-limits, fences, retries and
 * counts. Each verb answers with its resource's type: `client.get(POD, name)` is a `Pod`, a kind
 * whose `Resource` names no type is Unstructured.
 */
import type { ClusterConfig } from "./cluster_config.ts";
import type { KubeObject, ObjectList, ObjectTypeOf, Unstructured } from "./object.ts";
import { type RateLimit, RateLimiter } from "./rate_limiter.ts";
import { RequestCounter } from "./request_counter.ts";
import type {
  ApplyOptions,
  DeleteOptions,
  ListOptions,
  RequestOptions,
  WatchOptions,
  WriteOptions,
} from "./request_options.ts";
import { type RequestInit, RequestSender, type SenderParts } from "./request_sender.ts";
import { apiVersionOf, type Resource, resourcePath } from "./resource.ts";
import { Transport } from "./transport.ts";
import { type WatchEvent, watchEvents } from "./watch.ts";
import { bothFences, type WriteFence } from "./write_fence.ts";

/** How a client talks to its cluster. */
export interface ClientOptions {
  /** The `User-Agent` of every request, e.g. `ptemplate-operator/0.2.0`. */
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

/** A watch's response headers come at once; waiting longer means the connection is dead. */
const WATCH_HEADERS_TIMEOUT_MS = 15_000;

/**
 * A create-only apply's precondition: a resourceVersion no stored object has (the largest the
 * server parses; etcd's revisions never reach it). The API server checks an apply's
 * resourceVersion against the stored object's, refusing a mismatch (409), and ignores it when it
 * creates the object.
 */
const NO_STORED_VERSION = "18446744073709551615";

/**
 * Metadata alone, as client-go asks for it (the plain form after it, should the server not know
 * the other): a list must ask for the List kind, a watch for the object's (a watch asked for the
 * List kind is answered 200 and then says nothing at all).
 */
const METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," +
  "application/json";
const METADATA_OBJECT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1," +
  "application/json";

/** Handed to the constructor by `#view`: a view shares its client's sender. */
const VIEW = Symbol("view");

/** One client per cluster identity; share it, and `close()` it when done. */
export class KubeClient {
  /**
   * The connection to the cluster (shared by every view of this client).
   * @internal For the runtime (its configuration and health); not part of the plugin API.
   */
  readonly transport: Transport;
  /**
   * Counts of every request this client and its views made.
   * @internal For the runtime's metrics and for tests; not part of the plugin API.
   */
  readonly requests: RequestCounter;
  readonly #sender: RequestSender;
  /** Views share the connection of the client they came from, which alone closes it. */
  readonly #view: boolean;

  /** A client of the cluster `config` describes (`loadClusterConfig`), with `options`. */
  constructor(config: ClusterConfig, options: ClientOptions = {}) {
    const shared = (options as { [VIEW]?: RequestSender })[VIEW];
    this.#view = shared !== undefined;
    this.#sender = shared ?? new RequestSender({
      transport: new Transport(config),
      requests: new RequestCounter(),
      limiter: options.rateLimit && new RateLimiter(options.rateLimit),
      urgent: false,
      userAgent: options.userAgent,
      maxRetries: options.maxRetries,
      onResponse: options.onResponse,
    });
    this.transport = this.#sender.parts.transport;
    this.requests = this.#sender.parts.requests;
  }

  /**
   * The same client (connection, counters, options) with every write passing `fence` first, after
   * any fence this client already has (the tighter deadline wins): what the runtime hands to work
   * that only a leader may do, or only while its caches are current. Reads and watches are not
   * fenced.
   */
  fenced(fence: WriteFence): KubeClient {
    return this.#viewWith({ fence: bothFences(this.#sender.parts.fence, fence) });
  }

  /**
   * The same client, telling `onWrite` of every write it makes once answered (after any observer
   * this client already has): how a reconcile knows what it wrote, for `explain` and its trace.
   */
  observed(
    onWrite: (write: { method: string; path: string; code: number; dryRun: boolean }) => void,
  ): KubeClient {
    const outer = this.#sender.parts.onWrite;
    return this.#viewWith({
      onWrite: outer
        ? (write) => {
          outer(write);
          onWrite(write);
        }
        : onWrite,
    });
  }

  /**
   * The same client whose requests go before others waiting for the rate limiter (they still
   * count against it): for traffic with a deadline to keep, like lease renewals, which must not
   * queue behind a backlog of writes.
   */
  urgent(): KubeClient {
    return this.#viewWith({ urgent: true });
  }

  /**
   * The same client whose every write goes as a server-side dry run (`dryRun=All`): admission and
   * validation run and the answer is the object as it would be, but nothing is stored. Reads and
   * watches are as they were.
   */
  dryRun(): KubeClient {
    return this.#viewWith({ dryRun: true });
  }

  #viewWith(
    parts: Partial<Pick<SenderParts, "fence" | "urgent" | "onWrite" | "dryRun">>,
  ): KubeClient {
    const options = { [VIEW]: this.#sender.with(parts) };
    return new KubeClient(this.transport.config, options as ClientOptions);
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
  async request<T = unknown>(method: string, path: string, init: RequestInit = {}): Promise<T> {
    return await this.#sender.request<T>(method, path, init);
  }

  /** One object, by name (in `namespace`, or the config's default, for a namespaced kind). */
  async get<R extends Resource>(
    resource: R,
    name: string,
    options: RequestOptions & { namespace?: string; subresource?: string } = {},
  ): Promise<ObjectTypeOf<R>> {
    const path = resourcePath(resource, {
      namespace: this.#ns(resource, options.namespace),
      name,
      subresource: options.subresource,
    });
    return await this.request<ObjectTypeOf<R>>("GET", path, options);
  }

  /** One page of a list; pass `continue` from the previous page's metadata for the next. */
  async list<R extends Resource>(
    resource: R,
    options: ListOptions = {},
  ): Promise<ObjectList<ObjectTypeOf<R>>> {
    const path = resourcePath(resource, { namespace: options.namespace });
    const list = await this.request<ObjectList<ObjectTypeOf<R>>>("GET", path, {
      ...options,
      accept: options.metadataOnly ? METADATA_LIST : undefined,
      query: {
        labelSelector: options.labelSelector,
        fieldSelector: options.fieldSelector,
        limit: options.limit,
        continue: options.continue,
        resourceVersion: options.resourceVersion,
        // Every page repeats it: a continue token does not carry it.
        shardSelector: options.shardSelector,
      },
    });
    // An empty PartialObjectMetadataList comes with `"items": null`.
    list.items ??= [];
    return list;
  }

  /** Every item across all pages, and the resourceVersion of the list to watch from. */
  async listAll<R extends Resource>(
    resource: R,
    options: ListOptions = {},
  ): Promise<{ items: ObjectTypeOf<R>[]; resourceVersion: string }> {
    const items: ObjectTypeOf<R>[] = [];
    let page = await this.list(resource, { limit: 500, ...options });
    items.push(...page.items);
    while (page.metadata.continue) {
      page = await this.list(resource, {
        limit: 500,
        ...options,
        resourceVersion: undefined,
        continue: page.metadata.continue,
      });
      items.push(...page.items);
    }
    return { items, resourceVersion: page.metadata.resourceVersion ?? "" };
  }

  /**
   * Creates `object` (409 AlreadyExists when its name is taken); returns it as stored. Like every
   * write, it takes any object (a typed one, or a parsed manifest: the API server checks it) and
   * answers with the resource's own type.
   */
  async create<R extends Resource>(
    resource: R,
    object: KubeObject | Unstructured,
    options: WriteOptions = {},
  ): Promise<ObjectTypeOf<R>> {
    const path = resourcePath(resource, {
      namespace: this.#ns(resource, options.namespace ?? object.metadata?.namespace),
      name: options.subresource ? object.metadata?.name : undefined,
      subresource: options.subresource,
    });
    return await this.request<ObjectTypeOf<R>>("POST", path, {
      ...options,
      query: this.#writeQuery(options),
      body: this.#withType(resource, object, options.subresource),
    });
  }

  /** Replaces the object; its `metadata.resourceVersion` makes this a compare-and-swap (409 when stale). */
  async update<R extends Resource>(
    resource: R,
    object: KubeObject | Unstructured,
    options: WriteOptions = {},
  ): Promise<ObjectTypeOf<R>> {
    const path = this.#objectPath(resource, object, options);
    return await this.request<ObjectTypeOf<R>>("PUT", path, {
      ...options,
      query: this.#writeQuery(options),
      body: this.#withType(resource, object, undefined),
    });
  }

  /** A JSON merge patch (RFC 7386): `null` deletes a field. */
  async patch<R extends Resource>(
    resource: R,
    name: string,
    patch: unknown,
    options: WriteOptions = {},
  ): Promise<ObjectTypeOf<R>> {
    const path = resourcePath(resource, {
      namespace: this.#ns(resource, options.namespace),
      name,
      subresource: options.subresource,
    });
    return await this.request<ObjectTypeOf<R>>("PATCH", path, {
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
  async apply<R extends Resource>(
    resource: R,
    object: KubeObject | Unstructured,
    options: ApplyOptions,
  ): Promise<ObjectTypeOf<R>> {
    const path = this.#objectPath(resource, object, options);
    const body = options.createOnly
      ? { ...object, metadata: { ...object.metadata, resourceVersion: NO_STORED_VERSION } }
      : object;
    return await this.request<ObjectTypeOf<R>>("PATCH", path, {
      ...options,
      query: { ...this.#writeQuery(options), force: options.force || undefined },
      body: this.#withType(resource, body, undefined),
      contentType: "application/apply-patch+yaml",
    });
  }

  /** Deletes one object by name, with the preconditions and propagation the options give. */
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
  async *watch<R extends Resource>(
    resource: R,
    options: WatchOptions = {},
  ): AsyncGenerator<WatchEvent<ObjectTypeOf<R>>> {
    const path = resourcePath(resource, { namespace: options.namespace });
    const timeoutSeconds = options.timeoutSeconds ??
      Math.floor(300 + Math.random() * 300);
    let response: Response;
    try {
      response = await this.#sender.send("GET", path, {
        ...options,
        accept: options.metadataOnly ? METADATA_OBJECT : undefined,
        timeoutMs: options.timeoutMs ?? WATCH_HEADERS_TIMEOUT_MS,
        stream: true,
        query: {
          watch: true,
          allowWatchBookmarks: true,
          resourceVersion: options.resourceVersion,
          labelSelector: options.labelSelector,
          fieldSelector: options.fieldSelector,
          shardSelector: options.shardSelector,
          timeoutSeconds,
          sendInitialEvents: options.sendInitialEvents,
          resourceVersionMatch: options.sendInitialEvents ? "NotOlderThan" : undefined,
        },
      });
    } catch (error) {
      if (options.signal?.aborted) return;
      throw error;
    }
    yield* watchEvents<ObjectTypeOf<R>>(response, options.signal);
  }

  /** The path of `object` itself (or its subresource), in its namespace or the options'. */
  #objectPath(resource: Resource, object: KubeObject, options: WriteOptions): string {
    return resourcePath(resource, {
      namespace: this.#ns(resource, options.namespace ?? object.metadata?.namespace),
      name: this.#name(resource, object),
      subresource: options.subresource,
    });
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
