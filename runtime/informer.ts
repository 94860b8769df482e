/**
 * Keeps the cache of one kind (in one namespace, or all) current: list, then watch from the
 * list's resourceVersion; relist on 410 Gone; reconnect with jittered backoff; restart a watch
 * that has gone silent; and tell subscribers about every change.
 */
import type { KubeClient, KubeObject } from "../kube/client.ts";
import { ApiError, isApiError } from "../kube/errors.ts";
import { NetworkError } from "../kube/network_error.ts";
import { missingRule, StartupError } from "../kube/preflight.ts";
import { apiVersionOf, type Resource } from "../kube/resource.ts";
import { ReconnectBackoff } from "./backoff.ts";
import { sleep } from "../util/sleep.ts";
import type { Logger } from "./logging.ts";
import { slim, type SlimOptions } from "./slim.ts";
import { Store, type StoreChange } from "./store.ts";
import { causeOf, WarningThrottle } from "./warning_throttle.ts";

export interface InformerOptions {
  /** Only this namespace; all namespaces when absent. */
  namespace?: string;
  /** Page size of the initial list and relists. */
  pageSize?: number;
  /**
   * A watch that delivers nothing (not even a bookmark) for this long is treated as dead and
   * restarted from the last resourceVersion; default 3 minutes. Too small only costs a cheap
   * re-watch; too large delays noticing a half-open connection by that much.
   */
  silenceTimeoutMs?: number;
  /** How often to look again for a kind that is not installed (its CRD missing); default 10 s. */
  missingKindRetryMs?: number;
  log: Logger;
  /** Shared by all informers, so an outage is one warning per cause, not one per kind and retry. */
  warnings?: WarningThrottle;
  /** Never list or watch: the kind is not available here (see Watch.optional); its cache is empty. */
  skipped?: boolean;
  /** The plugins work without it: a 403 makes it unavailable (like a missing CRD), not stuck. */
  optional?: boolean;
  /** What the cache drops of each object (see slim.ts). */
  slim?: SlimOptions;
}

export type ChangeHandler<T> = (change: StoreChange<T>) => void;

/** How one watch connection ended (410 Gone and failures are thrown instead). */
type RoundEnd = "rewatch" | "stopped";

export class Informer<T extends KubeObject = KubeObject> {
  readonly store: Store<T> = new Store<T>();
  readonly resource: Resource;
  readonly namespace?: string;
  readonly #client: KubeClient;
  readonly #options: InformerOptions;
  readonly #warnings: WarningThrottle;
  readonly #handlers = new Set<ChangeHandler<T>>();
  readonly #installedHandlers = new Set<() => void>();
  readonly #synced = Promise.withResolvers<void>();
  #hasSynced = false;
  #installed = true;
  #resourceVersion = "";
  #running?: Promise<void>;
  /** Counts list calls, for tests and metrics. */
  lists = 0;

  constructor(client: KubeClient, resource: Resource, options: InformerOptions) {
    // Rejects only when a required kind may not be read; whoever waits for sync hears of it.
    this.#synced.promise.catch(() => {});
    this.#client = client;
    this.resource = resource;
    this.namespace = resource.namespaced ? options.namespace : undefined;
    this.#options = options;
    this.#warnings = options.warnings ?? new WarningThrottle(options.log);
    if (options.skipped) this.#installed = false;
  }

  /** Resolves once the first list is in the cache. */
  get synced(): Promise<void> {
    return this.#synced.promise;
  }

  get hasSynced(): boolean {
    return this.#hasSynced;
  }

  /** False while the API server does not serve this kind (e.g. its CRD is not installed). */
  get installed(): boolean {
    return this.#installed;
  }

  /** Subscribes to changes; returns the unsubscribe function. New subscribers do not get a replay. */
  onChange(handler: ChangeHandler<T>): () => void {
    this.#handlers.add(handler);
    return () => this.#handlers.delete(handler);
  }

  /** Calls `handler` whenever the kind becomes served after it was not (its CRD appeared). */
  onInstalled(handler: () => void): () => void {
    this.#installedHandlers.add(handler);
    return () => this.#installedHandlers.delete(handler);
  }

  /**
   * Takes the API server's answer to our own write into the cache at once, so a reconcile that
   * runs before the watch delivers it does not see the old version and write again. Handlers
   * hear it as a change now; the watch's copy of the same version is then no change at all.
   */
  observe(object: T): void {
    if (this.namespace && object.metadata?.namespace !== this.namespace) return;
    const change = this.store.upsertIfNewer(slim(object, this.#options.slim));
    if (change) this.#emit([change]);
  }

  /** Runs until `signal` aborts. Calling it again while running returns the same promise. */
  run(signal: AbortSignal): Promise<void> {
    if (this.#options.skipped) {
      this.#installed = false;
      this.#markSynced();
      return Promise.resolve();
    }
    this.#running ??= this.#loop(signal);
    return this.#running;
  }

  async #loop(signal: AbortSignal): Promise<void> {
    const backoff = new ReconnectBackoff();
    const log = this.#options.log.with({ kind: this.resource.kind, namespace: this.namespace });
    let needList = true;
    while (!signal.aborted) {
      const started = Date.now();
      try {
        if (needList) {
          await this.#list(signal);
          needList = false;
        }
        const { end, events } = await this.#watch(signal);
        if (end === "rewatch" && events === 0 && Date.now() - started < 1_000) {
          // A server that ends every watch at once (shutting down, a proxy) must not be
          // hammered in a tight loop: back off as after a failure.
          await sleep(backoff.next(), signal);
        } else if (end !== "stopped") {
          backoff.reset();
        }
        continue;
      } catch (error) {
        if (signal.aborted) break;
        if (isApiError(error, 410)) {
          log.info("resourceVersion {rv} expired (410 Gone); relisting", {
            rv: this.#resourceVersion,
          });
          needList = true;
          continue;
        }
        if (isApiError(error, 403) && needList && !this.#hasSynced && !this.#options.optional) {
          // Not allowed to read a kind the plugins need: nothing can work, so say what to grant.
          const { group, plural } = this.resource;
          this.#synced.reject(
            new StartupError(
              `${error.message}; ${missingRule(group, plural, ["list", "watch"], this.namespace)}`,
            ),
          );
          return;
        }
        const forbidden = isApiError(error, 403) && this.#options.optional;
        if ((isApiError(error, 404) || forbidden) && needList) {
          if (this.#installed) {
            log.warn(
              forbidden
                ? "not allowed to list {kind} (403), which is optional: what it is read for is " +
                  "off; grant list and watch on {plural} to turn it on. Looking again every " +
                  "{seconds} s"
                : "{kind} is not served by the API server (is its CRD installed?); looking " +
                  "again every {seconds} s",
              {
                plural: this.resource.plural,
                seconds: (this.#options.missingKindRetryMs ?? 10_000) / 1000,
              },
            );
          }
          this.#installed = false;
          // An absent kind is an empty cache, not a reason to hold everything else back.
          this.#markSynced();
          await sleep(this.#options.missingKindRetryMs ?? 10_000, signal);
          continue;
        }
        if (error instanceof NetworkError && error.failure === "replaced" && !needList) {
          // We replaced the connection (the transport said why): watch again at once. A reset
          // by the peer or the path is a failure like any other, with its backoff.
          log.debug("watch ended with its connection; watching again", {});
          continue;
        }
        const delay = backoff.next(Date.now() - started);
        const message = error instanceof Error ? error.message : String(error);
        this.#warnings.warn(
          causeOf(error),
          "watch of {kind} failed: {error}; retrying in {delay} ms",
          { kind: this.resource.kind, error: message, delay: Math.round(delay) },
        );
        await sleep(delay, signal);
      }
    }
  }

  async #list(signal: AbortSignal): Promise<void> {
    const { items, resourceVersion } = await this.#client.listAll<T>(this.resource, {
      namespace: this.namespace,
      labelSelector: this.resource.labelSelector,
      fieldSelector: this.resource.fieldSelector,
      limit: this.#options.pageSize ?? 500,
      signal,
    });
    this.lists++;
    const appeared = !this.#installed;
    this.#resourceVersion = resourceVersion;
    const kind = this.resource.kind;
    const apiVersion = apiVersionOf(this.resource);
    // List items omit apiVersion and kind; put them back so cached objects look like watched ones.
    for (const item of items) slim(Object.assign(item, { apiVersion, kind }), this.#options.slim);
    this.#emit(this.store.replace(items));
    this.#markSynced();
    if (appeared) {
      this.#installed = true;
      this.#options.log.info("{kind} is served now; caching it", { kind: this.resource.kind });
      for (const handler of this.#installedHandlers) handler();
    }
  }

  #markSynced(): void {
    if (this.#hasSynced) return;
    this.#hasSynced = true;
    this.#synced.resolve();
  }

  /** One watch connection, until the server ends it, it goes silent, or it fails. */
  async #watch(signal: AbortSignal): Promise<{ end: RoundEnd; events: number }> {
    const silence = this.#options.silenceTimeoutMs ?? 180_000;
    const watchAbort = new AbortController();
    const stop = () => watchAbort.abort();
    signal.addEventListener("abort", stop, { once: true });
    let silent = false;
    let events = 0;
    let watchdog = setTimeout(() => {
      silent = true;
      watchAbort.abort();
    }, silence);
    try {
      for await (
        const event of this.#client.watch<T>(this.resource, {
          namespace: this.namespace,
          labelSelector: this.resource.labelSelector,
          fieldSelector: this.resource.fieldSelector,
          resourceVersion: this.#resourceVersion,
          signal: watchAbort.signal,
        })
      ) {
        events++;
        clearTimeout(watchdog);
        watchdog = setTimeout(() => {
          silent = true;
          watchAbort.abort();
        }, silence);
        const rv = event.object.metadata?.resourceVersion;
        if (event.type === "BOOKMARK") {
          if (rv) this.#resourceVersion = rv;
          continue;
        }
        const change = event.type === "DELETED"
          ? this.store.remove(event.object)
          : this.store.upsert(slim(event.object, this.#options.slim));
        if (rv) this.#resourceVersion = rv;
        if (change) this.#emit([change]);
      }
    } catch (error) {
      if (error instanceof ApiError) throw error;
      if (!signal.aborted && !silent) throw error;
    } finally {
      clearTimeout(watchdog);
      signal.removeEventListener("abort", stop);
    }
    if (signal.aborted) return { end: "stopped", events };
    if (silent) {
      this.#options.log.info("watch of {kind} silent for {seconds} s; restarting it", {
        kind: this.resource.kind,
        seconds: silence / 1000,
      });
    }
    return { end: "rewatch", events };
  }

  #emit(changes: StoreChange<T>[]): void {
    for (const change of changes) {
      for (const handler of this.#handlers) {
        try {
          handler(change);
        } catch (error) {
          this.#options.log.error("change handler failed: {error}", { error });
        }
      }
    }
  }
}
