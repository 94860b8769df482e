/**
 * Keeps the cache of one kind (in one namespace, or all) current: list, then watch from the
 * list's resourceVersion; relist on 410 Gone; reconnect with jittered backoff; restart a watch
 * that has gone silent; and tell subscribers about every change.
 *
 * It also says whether the cache may be trusted to decide writes. After a watch fails (a
 * network failure, a replaced connection, a silent watch, an error from the server) the cache
 * may have missed changes — a deleted parent still in it would have its children created again —
 * so it is *behind* until it has listed again; `fresh` says which, `epoch` counts the falls, and
 * the runtime writes nothing from a cache that is behind (see Controller). A watch the server
 * ends cleanly (its timeout) resumes from the last resourceVersion without falling behind: the
 * resumed watch delivers everything since. When the API server is heard again after an outage
 * (`nudge`), a relist waiting out its backoff goes at once, so the caches return with the network.
 *
 * Why a paged LIST (500 a page) and not the streaming list (a watch with `sendInitialEvents`,
 * WatchList), which 1.36 serves by default: in Deno the stream costs more memory at its peak than
 * the pages, because Deno's fetch keeps each of its many small chunks in a buffer until the next
 * GC, which outweighs the heap the stream saves (bench/README.md, "Paged list or streaming
 * list"). The gains of the stream are the API server's.
 */
import type { KubeClient } from "../../kube/client.ts";
import type { KubeObject } from "../../kube/object.ts";
import { ApiError } from "../../kube/errors.ts";
import { apiVersionOf, type Resource } from "../../kube/resource.ts";
import type { WatchEvent } from "../../kube/watch.ts";
import { monotonicMs } from "../../util/clock.ts";
import { ReconnectBackoff } from "../../util/backoff.ts";
import { sleep } from "../../util/sleep.ts";
import { causeOf, WarningThrottle } from "../observe/mod.ts";
import { type Behind, CacheFreshness } from "./cache_freshness.ts";
import { ChangeFanout } from "./change_fanout.ts";
import type { ChangeHandler, InformerOptions } from "./informer_options.ts";
import { keptVersion } from "./kept_version.ts";
import { metadataOnly } from "./projection.ts";
import { SilenceWatchdog } from "./silence_watchdog.ts";
import { Store } from "./store.ts";
import { judgeFailure } from "./watch_failure.ts";

/**
 * How one watch connection ended (410 Gone and failures are thrown instead): the server closed
 * it (resume it), we are stopping, it went silent (relist), or a relist was asked for.
 */
type RoundEnd = "rewatch" | "stopped" | "silent" | "recheck";

/** How often a kind that is not served is looked for (see InformerOptions.missingKindRetryMs). */
const DEFAULT_MISSING_KIND_RETRY_MS = 2_000;

/**
 * The cache of one kind in one namespace (or all): lists, watches, tells subscribers of every
 * change, and says whether it may decide writes (see the module doc).
 */
export class Informer<T extends KubeObject = KubeObject> {
  /** The objects, as the API server last told them; read it, never write to what it holds. */
  readonly store: Store<T>;
  /** The kind it caches. */
  readonly resource: Resource;
  /** The namespace it watches; undefined for all namespaces and for a cluster-scoped kind. */
  readonly namespace?: string;
  readonly #client: KubeClient;
  readonly #options: InformerOptions;
  readonly #warnings: WarningThrottle;
  readonly #changes: ChangeFanout<T>;
  readonly #servedHandlers = new Set<(served: boolean) => void>();
  readonly #synced = Promise.withResolvers<void>();
  #hasSynced = false;
  #installed = true;
  #resourceVersion = "";
  #running?: Promise<void>;
  /** Set while the cache may have missed changes; see the module doc. */
  readonly #freshness: CacheFreshness;
  /** Ends the current watch so that the loop lists again (see `recheck`). */
  #rewatch?: AbortController;
  /** Wakes the loop from a wait (backoff, or a look for a missing kind). */
  #wake?: { controller: AbortController; network: boolean };
  #recheckAsked = false;
  /** Counts `recheck` calls: a list that began before the latest one does not catch the cache up. */
  #rechecks = 0;
  #absence: "not served" | "not allowed" = "not served";
  /** Counts list calls, for tests and metrics. */
  lists = 0;
  /** Whether any list has succeeded (so that "no longer served" is news). */
  #hasListed = false;

  /** Does nothing until it runs; a cluster-scoped kind ignores `options.namespace`. */
  constructor(client: KubeClient, resource: Resource, options: InformerOptions) {
    // Rejects only when a required kind may not be read; whoever waits for sync hears of it.
    this.#synced.promise.catch(() => {});
    this.#client = client;
    this.resource = resource;
    this.store = new Store<T>(resource);
    this.namespace = resource.namespaced ? options.namespace : undefined;
    this.#options = options;
    this.#warnings = options.warnings ?? new WarningThrottle(options.log);
    this.#changes = new ChangeFanout(options.log);
    if (options.skipped) this.#installed = false;
    // An idle part is rightly empty: fresh.
    this.#freshness = new CacheFreshness(options.part?.idle ? undefined : "not listed yet");
    if (options.part?.idle) this.#markSynced();
  }

  /** The shard whose objects this cache holds; undefined when every shard reads it. */
  get shard(): number | undefined {
    return this.#options.part?.shard;
  }

  /** Resolves once the first list is in the cache. */
  get synced(): Promise<void> {
    return this.#synced.promise;
  }

  /** Whether the first list is in the cache (an idle part counts): `synced`, without waiting. */
  get hasSynced(): boolean {
    return this.#hasSynced;
  }

  /** False while the API server does not serve this kind (e.g. its CRD is not installed). */
  get installed(): boolean {
    return this.#installed;
  }

  /**
   * Why the kind is not available, while it is not: "not served" (its CRD is missing), "not
   * allowed" (an optional kind we may not read), or "not watched" (skipped); else undefined.
   */
  get unavailable(): "not served" | "not allowed" | "not watched" | undefined {
    if (this.#options.skipped) return "not watched";
    return this.#installed ? undefined : this.#absence;
  }

  /**
   * True when writes may be decided from this cache: it has listed, and no watch has failed
   * since (a kind known not to be served is fresh: its cache is rightly empty).
   */
  get fresh(): boolean {
    return this.#freshness.behind === undefined;
  }

  /** Counts the times the cache fell behind: what was read at another epoch may be stale. */
  get epoch(): number {
    return this.#freshness.epoch;
  }

  /** Why and since when the cache is behind, or undefined when it is fresh. */
  get behind(): Behind | undefined {
    return this.#freshness.behind;
  }

  /** Resolves when the cache is fresh (at once if it is). */
  whenFresh(): Promise<void> {
    return this.#freshness.whenFresh();
  }

  /**
   * Lists again now, whatever the watch says: someone has reason to think the kind changed
   * under us (a write answered that the kind is not served). The cache is behind until then.
   */
  recheck(reason: string): void {
    if (this.#options.skipped) return;
    this.#freshness.fallBehind(reason);
    this.#recheckAsked = true;
    this.#rechecks++;
    this.#rewatch?.abort();
    this.#wake?.controller.abort();
  }

  /** The API server answers again after a network failure: a relist waiting on backoff goes now. */
  nudge(): void {
    if (this.#wake?.network) this.#wake.controller.abort();
  }

  /** Subscribes to changes; returns the unsubscribe function. New subscribers do not get a replay. */
  onChange(handler: ChangeHandler<T>): () => void {
    return this.#changes.add(handler);
  }

  /**
   * Calls `handler` whenever the kind starts being served after it was not (its CRD appeared:
   * `true`) or stops (its CRD was deleted: `false`, after the cache was emptied).
   */
  onServedChange(handler: (served: boolean) => void): () => void {
    this.#servedHandlers.add(handler);
    return () => this.#servedHandlers.delete(handler);
  }

  /**
   * Takes the API server's answer to our own write into the cache at once, so a reconcile that
   * runs before the watch delivers it does not see the old version and write again. Handlers
   * hear it as a change now; the watch's copy of the same version is then no change at all.
   */
  observe(object: T): void {
    if (this.namespace && object.metadata?.namespace !== this.namespace) return;
    if (!this.#keeps(object)) {
      // Not (or no longer) this part's: the copy this part may hold is out of date.
      const change = this.store.remove(object);
      if (change) this.#changes.emit([change]);
      return;
    }
    const change = this.store.upsertIfNewer(this.#keep(object));
    if (change) this.#changes.emit([change]);
  }

  /** What the cache keeps of an object that arrived, beside the version it holds (kept_version.ts). */
  #keep(object: T, held = this.store.current(object)): T {
    return keptVersion(object, held, this.#options);
  }

  /** Whether the server is asked for metadata alone (nothing of the bodies is kept). */
  get #metadataOnly(): boolean {
    const { projector } = this.#options;
    return projector !== undefined && metadataOnly(projector.projection);
  }

  /**
   * Runs until `signal` aborts. Calling it again while running returns the same promise; after it
   * has ended, it runs anew.
   */
  run(signal: AbortSignal): Promise<void> {
    if (this.#options.skipped) {
      this.#installed = false;
      this.#markSynced();
      this.#freshness.catchUp();
      return Promise.resolve();
    }
    this.#running ??= this.#loop(signal).finally(() => this.#running = undefined);
    return this.#running;
  }

  /**
   * Starts an idle part (its shard was taken on): behind until it has listed, then kept current
   * until `signal` aborts; then `clear` it.
   */
  resume(signal: AbortSignal): Promise<void> {
    this.#freshness.fallBehind("not listed yet");
    return this.run(signal);
  }

  /**
   * Empties a part that stopped (its shard was handed on), telling subscribers of each object
   * that went; rightly empty, it is fresh.
   */
  clear(): void {
    this.#resourceVersion = "";
    this.#changes.emit(this.store.replace([]));
    this.#freshness.catchUp();
  }

  /** Whether this part keeps `object`. */
  #keeps(object: KubeObject): boolean {
    return this.#options.part?.keeps(object) ?? true;
  }

  /** The kind's label selector, and the part's added to it. */
  #query(): { labelSelector?: string; fieldSelector?: string; shardSelector?: string } {
    const extra = this.#options.part?.query?.() ?? {};
    const labels = [this.resource.labelSelector, extra.labelSelector].filter(Boolean);
    return {
      labelSelector: labels.length ? labels.join(",") : undefined,
      fieldSelector: this.resource.fieldSelector,
      shardSelector: extra.shardSelector,
    };
  }

  async #loop(signal: AbortSignal): Promise<void> {
    const backoff = new ReconnectBackoff();
    const log = this.#options.log.with({ kind: this.resource.kind, namespace: this.namespace });
    const missingRetryMs = this.#options.missingKindRetryMs ?? DEFAULT_MISSING_KIND_RETRY_MS;
    let needList = true;
    while (!signal.aborted) {
      const started = monotonicMs();
      try {
        if (needList || this.#recheckAsked) {
          this.#recheckAsked = false;
          await this.#list(signal);
          needList = false;
        }
        const { end, events } = await this.#watch(signal);
        if (end === "stopped") continue;
        if (end === "silent" || end === "recheck") {
          // A silent watch may have been dead for a while: its cache is behind until relisted.
          if (end === "silent") this.#freshness.fallBehind("its watch went silent");
          needList = true;
          continue;
        }
        if (events === 0 && monotonicMs() - started < 1_000) {
          // A server that ends every watch at once (shutting down, a proxy) must not be
          // hammered in a tight loop: back off as after a failure.
          await this.#pause(backoff.next(), signal, false);
        } else {
          backoff.reset();
        }
        continue;
      } catch (error) {
        if (signal.aborted) break;
        const verdict = judgeFailure(error, {
          listing: needList,
          synced: this.#hasSynced,
          optional: this.#options.optional,
          resource: this.resource,
          namespace: this.namespace,
        });
        if (verdict.next === "give up") {
          this.#synced.reject(verdict.error);
          return;
        }
        // Whatever happened, changes may have gone by unseen: list before trusting the cache.
        needList = true;
        if (verdict.next === "missing") {
          if (this.#installed) {
            log.warn(verdict.warning, {
              plural: this.resource.plural,
              seconds: missingRetryMs / 1000,
            });
          }
          this.#absence = verdict.absence;
          this.#goMissing();
          await this.#pause(missingRetryMs, signal, false);
          continue;
        }
        this.#freshness.fallBehind(verdict.behind);
        if (verdict.next === "look") {
          await this.#pause(backoff.next(monotonicMs() - started), signal, false);
        } else if (verdict.next === "relist" && verdict.why === "expired") {
          log.info("resourceVersion {rv} expired (410 Gone); relisting", {
            rv: this.#resourceVersion,
          });
        } else if (verdict.next === "relist") {
          log.debug("watch ended with its connection; listing again", {});
        } else {
          const delay = backoff.next(monotonicMs() - started);
          const message = error instanceof Error ? error.message : String(error);
          this.#warnings.warn(
            causeOf(error),
            "watch of {kind} failed: {error}; retrying in {delay} ms",
            { kind: this.resource.kind, error: message, delay: Math.round(delay) },
          );
          await this.#pause(delay, signal, verdict.network);
        }
      }
    }
  }

  /** Waits `ms`, or less when asked to look again (`recheck`, or `nudge` for a network wait). */
  async #pause(ms: number, signal: AbortSignal, network: boolean): Promise<void> {
    const wake = { controller: new AbortController(), network };
    this.#wake = wake;
    try {
      await sleep(ms, AbortSignal.any([signal, wake.controller.signal]));
    } finally {
      if (this.#wake === wake) this.#wake = undefined;
    }
  }

  /**
   * The kind is not served (its CRD is missing or was deleted): an empty cache, told to every
   * subscriber, and rightly so until it is served again.
   */
  #goMissing(): void {
    const wasServed = this.#installed;
    this.#installed = false;
    this.#resourceVersion = "";
    this.#changes.emit(this.store.replace([]));
    // An absent kind is an empty cache, not a reason to hold everything else back.
    this.#markSynced();
    this.#freshness.catchUp();
    if (wasServed && this.#hasListed) {
      for (const handler of this.#servedHandlers) handler(false);
    }
  }

  async #list(signal: AbortSignal): Promise<void> {
    const rechecks = this.#rechecks;
    const { items: listed, resourceVersion } = await this.#client.listAll(this.resource, {
      namespace: this.namespace,
      ...this.#query(),
      limit: this.#options.pageSize ?? 500,
      metadataOnly: this.#metadataOnly,
      signal,
    }) as unknown as { items: T[]; resourceVersion: string }; // typed generically: these are `T`s
    // The server may not have narrowed the list as asked (a shard selector it does not honour).
    const items = this.#options.part ? listed.filter((item) => this.#keeps(item)) : listed;

    this.lists++;
    this.#hasListed = true;
    const appeared = !this.#installed;
    this.#resourceVersion = resourceVersion;
    const kind = this.resource.kind;
    const apiVersion = apiVersionOf(this.resource);
    // List items omit apiVersion and kind (or say PartialObjectMetadata): put them back.
    const kept = items.map((item) => this.#keep(Object.assign(item, { apiVersion, kind })));
    this.#changes.emit(this.store.replace(kept));
    this.#markSynced();
    // Asked to look again while this list was under way (say, for other shards): it is not the
    // answer to that, so the cache stays behind until the next one.
    if (rechecks !== this.#rechecks) return;
    const behind = this.#freshness.behind;
    this.#freshness.catchUp();
    if (behind && this.#hasSynced && behind.reason !== "not listed yet") {
      this.#options.log.info("{kind} listed again after {seconds} s behind ({reason})", {
        kind: this.resource.kind,
        seconds: Math.round((monotonicMs() - behind.since) / 100) / 10,
        reason: behind.reason,
      });
    }
    if (appeared) {
      this.#installed = true;
      this.#options.log.info("{kind} is served now; caching it", { kind: this.resource.kind });
      for (const handler of this.#servedHandlers) handler(true);
    }
  }

  #markSynced(): void {
    if (this.#hasSynced) return;
    this.#hasSynced = true;
    this.#synced.resolve();
  }

  /** One watch connection, until the server ends it, it goes silent, or it fails. */
  async #watch(signal: AbortSignal): Promise<{ end: RoundEnd; events: number }> {
    // Asked to look again while listing: list again before watching.
    if (this.#recheckAsked) return { end: "recheck", events: 0 };
    const silence = this.#options.silenceTimeoutMs ?? 180_000;
    const watchAbort = new AbortController();
    const stop = () => watchAbort.abort();
    signal.addEventListener("abort", stop, { once: true });
    const rewatch = new AbortController();
    rewatch.signal.addEventListener("abort", stop, { once: true });
    this.#rewatch = rewatch;
    let events = 0;
    const watchdog = new SilenceWatchdog(silence, () => watchAbort.abort());
    try {
      for await (
        const event of this.#client.watch(this.resource, {
          namespace: this.namespace,
          ...this.#query(),
          metadataOnly: this.#metadataOnly,
          resourceVersion: this.#resourceVersion,
          signal: watchAbort.signal,
        }) as unknown as AsyncGenerator<WatchEvent<T>>
      ) {
        events++;
        watchdog.heard();
        const rv = event.object.metadata?.resourceVersion;
        if (event.type === "BOOKMARK") {
          if (rv) this.#resourceVersion = rv;
          continue;
        }
        // One the server should not have sent (a selector it does not honour), or one that left
        // this part (a child's bucket label edited): gone as far as this part is concerned.
        if (this.#metadataOnly) {
          Object.assign(event.object, {
            apiVersion: apiVersionOf(this.resource),
            kind: this.resource.kind,
          });
        }
        const held = this.store.current(event.object);
        const change = event.type === "DELETED" || !this.#keeps(event.object)
          ? this.store.remove(event.object)
          // The echo of our own write, taken from its answer: nothing to project again.
          : held !== undefined && held.metadata?.resourceVersion === rv
          ? undefined
          : this.store.upsert(this.#keep(event.object, held));
        if (rv) this.#resourceVersion = rv;
        if (change) this.#changes.emit([change]);
      }
    } catch (error) {
      if (error instanceof ApiError) throw error;
      if (!signal.aborted && !watchdog.silent && !rewatch.signal.aborted) throw error;
    } finally {
      watchdog.stop();
      signal.removeEventListener("abort", stop);
      if (this.#rewatch === rewatch) this.#rewatch = undefined;
    }
    if (signal.aborted) return { end: "stopped", events };
    if (rewatch.signal.aborted) return { end: "recheck", events };
    if (watchdog.silent) {
      this.#options.log.info("watch of {kind} silent for {seconds} s; listing again", {
        kind: this.resource.kind,
        seconds: silence / 1000,
      });
      return { end: "silent", events };
    }
    return { end: "rewatch", events };
  }
}
