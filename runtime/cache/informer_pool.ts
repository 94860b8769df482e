/**
 * Shares informers between plugins: one LIST+WATCH per kind and namespace scope, however many
 * plugins read or watch that kind; with a ring of shards, one per shard this replica holds for
 * the kinds that follow the shards (see PoolSharding).
 */
import type { KubeClient } from "../../kube/client.ts";
import type { KubeObject, Stored } from "../../kube/object.ts";
import { apiVersionOf, type Resource } from "../../kube/resource.ts";
import { bucketLabel, bucketsOf, shardOf, shardSelector } from "../../kube/shard_range.ts";
import { monotonicMs } from "../../util/clock.ts";
import { Informer } from "./informer.ts";
import type { CachePart, ChangeHandler } from "./informer_options.ts";
import { type Logger, type ProbeChecks, type Registry, WarningThrottle } from "../observe/mod.ts";
import { Interner } from "./interner.ts";
import { type Projection, projector } from "./projection.ts";
import type { CacheListOptions, CacheReader } from "./store.ts";

/** What the pool watches and how: namespaces, timings, what each cache keeps, and the shards. */
export interface InformerPoolOptions {
  /** Watch only these namespaces (namespaced kinds); all when absent or empty. */
  namespaces?: string[];
  /**
   * Namespaced kinds to watch once across all namespaces, keeping only what is in `namespaces`,
   * rather than once in each: one list and watch instead of one per namespace (each watch holds
   * memory of its own, most of it Deno's stream: bench/README.md, "What one idle watch costs:
   * `bench/stream_cost.ts`"), for reads of every namespace's
   * objects of the kind (the operator must be allowed to list and watch it cluster-wide). None
   * by default.
   */
  acrossNamespaces?: (resource: Resource) => boolean;
  /** Where the pool's and its informers' warnings go (one throttle for all). */
  log: Logger;
  /** Passed to every informer; see InformerOptions. */
  silenceTimeoutMs?: number;
  /** Passed to every informer; see InformerOptions. */
  missingKindRetryMs?: number;
  /**
   * The kinds plugins write as children, and the runtime's field managers (the plugins' names):
   * their caches keep other managers' field sets, so additions to a child can be seen.
   */
  children?: { resources: Resource[]; managers: ReadonlySet<string> };
  /** Caches that follow the shards of a ring, when the replicas split the work; see PoolSharding. */
  sharding?: PoolSharding;
  /** What the cache of a kind keeps of its objects' bodies (projection.ts); all when undefined. */
  projection?: (resource: Resource) => Projection | undefined;
}

/**
 * How the caches follow a ring of shards (runtime/shards/). A kind is split one of three ways
 * (`kind`), or kept whole (Nodes, say, which every shard reads):
 *
 * - `uid`, a kind whose objects are keys of their own (a plugin's `for`): one cache per shard
 *   held, each asking the server for its uid range (`shardSelector`, where the server honours
 *   it: `serverSelects`) and keeping what hashes into it. Without the server's help each such
 *   cache lists the whole kind and keeps its part.
 * - `controller`, children (a plugin's `owns`), whose uids the server cannot map to their
 *   parents': children carry their parent's bucket in `label`, and one cache per shard held asks
 *   for those buckets by label (and keeps, besides, what our own write or look found of a child
 *   whose parent is in the shard, its label edited: until we apply it again); one more cache
 *   holds what carries no such label (objects that are no one's children, children made before
 *   sharding), on every replica.
 * - `key`, other kinds a plugin maps to a parent (`key`: its uid): one cache, keeping what
 *   belongs to a shard held (or to none), listed again when the shards held change.
 *
 * A cache of a shard not held is empty, synced and fresh (rightly empty); `startShard` lists it,
 * `stopShard` stops and empties it.
 */
export interface PoolSharding {
  /** How many shards the ring has. */
  count: number;
  /** How `resource`'s caches follow the shards; undefined keeps it whole. */
  kind(resource: Resource): KindSharding | undefined;
  /** Whether the API server honours `shardSelector` (asked at each list and watch). */
  serverSelects(): boolean;
}

/** How one kind's caches follow the shards; see PoolSharding. */
export type KindSharding =
  | { by: "uid" }
  | {
    by: "controller";
    /** The label holding the parent's bucket. */
    label: string;
    /** The uid of the object's controller (its parent), if it has one. */
    key: (object: KubeObject) => string | undefined;
  }
  | { by: "key"; key: (object: KubeObject) => string | undefined };

/** What tells caches apart: one (per namespace, per shard) for each kind and selectors. */
export function resourceId(resource: Resource): string {
  let id = resourceIds.get(resource);
  if (id === undefined) {
    const { group, version, plural, labelSelector = "", fieldSelector = "" } = resource;
    resourceIds.set(
      resource,
      id = `${group}/${version}/${plural}?${labelSelector}&${fieldSelector}`,
    );
  }
  return id;
}

/** Resources are constants, asked for their id on every cache read: each is worked out once. */
const resourceIds = new WeakMap<Resource, string>();

/** The cache of one kind across the namespaces the pool watches. */
class ScopedCache<T extends KubeObject> implements CacheReader<T> {
  constructor(readonly informers: Informer<T>[]) {}

  get(namespace: string | undefined, name: string): Stored<T> | undefined {
    for (const informer of this.informers) {
      if (informer.namespace && informer.namespace !== namespace) continue;
      const found = informer.store.get(namespace, name);
      if (found) return found;
    }
    return undefined;
  }

  list(options: CacheListOptions = {}): Stored<T>[] {
    const { namespace, limit = Infinity } = options;
    const informers = this.informers.filter((i) =>
      !namespace || !i.namespace || i.namespace === namespace
    );
    if (informers.length === 1) return informers[0].store.list(options);
    const out: Stored<T>[] = [];
    for (const informer of informers) {
      if (out.length >= limit) break;
      out.push(...informer.store.list({ ...options, limit: limit - out.length }));
    }
    return out;
  }

  ownedBy(uid: string): Stored<T>[] {
    return this.informers.flatMap((i) => i.store.ownedBy(uid));
  }
}

/** What the pool's readers use of it (a controller, its applier): caches, informers, changes. */
export type PoolReader = Pick<InformerPool, "cache" | "informers" | "onChange">;

/**
 * The informers of an operator, shared by its plugins: one list and watch per kind and scope (see
 * the module doc), made on first use and run by the pool.
 */
export class InformerPool {
  readonly #client: KubeClient;
  readonly #options: InformerPoolOptions;
  readonly #informers = new Map<string, Informer<KubeObject>[]>();
  #signal?: AbortSignal;
  readonly #runs: Promise<void>[] = [];
  readonly #warnings: WarningThrottle;
  /** One for every cache: the same image or field manager in a Module and a DaemonSet is shared. */
  readonly #interner = new Interner();
  /** The shards held, and what stops their caches. */
  readonly #held = new Map<number, { stop: AbortController; runs: Promise<void>[] }>();

  /** An empty pool; its informers list again at once when `client`'s connection recovers. */
  constructor(client: KubeClient, options: InformerPoolOptions) {
    this.#client = client;
    this.#options = options;
    this.#warnings = new WarningThrottle(options.log);
    // The network is back: caches waiting out a reconnect backoff list again now, rather than
    // leave the runtime unable to write for up to 30 s more.
    client.transport.health.onRecovered(() => {
      for (const informer of this.all()) informer.nudge();
    });
  }

  /**
   * The informers of `resource`, created on first use (and started, if the pool runs). The first
   * use decides whether an optional cluster-scoped kind is skipped when the pool is restricted to
   * namespaces.
   */
  informers<T extends KubeObject>(
    resource: Resource,
    use: { optional?: boolean } = {},
  ): Informer<T>[] {
    const id = resourceId(resource);
    let informers = this.#informers.get(id);
    if (!informers) {
      const restricted = Boolean(this.#options.namespaces?.length);
      const across = restricted && resource.namespaced &&
        this.#options.acrossNamespaces?.(resource) === true;
      const scopes = resource.namespaced && restricted && !across
        ? this.#options.namespaces!
        : [undefined];
      const skipped = use.optional === true && restricted && !resource.namespaced;
      const children = this.#options.children;
      const slim = children?.resources.some((r) => resourceId(r) === id)
        ? { keepFieldSetsExcept: children.managers }
        : undefined;
      if (skipped) {
        this.#options.log.info(
          "not watching {kind}: it is cluster-scoped, optional, and the operator watches only " +
            "some namespaces",
          { kind: resource.kind },
        );
      }
      const parts = across ? this.#listedOnly(this.#parts(resource)) : this.#parts(resource);
      const projection = this.#options.projection?.(resource);
      informers = scopes.flatMap((namespace) =>
        parts.map((part) =>
          new Informer(this.#client, resource, {
            namespace,
            skipped,
            optional: use.optional,
            log: this.#options.log,
            warnings: this.#warnings,
            silenceTimeoutMs: this.#options.silenceTimeoutMs,
            missingKindRetryMs: this.#options.missingKindRetryMs,
            slim,
            projector: projection && projector(projection),
            interner: this.#interner,
            part,
          })
        )
      );
      this.#informers.set(id, informers);
      if (this.#options.sharding?.kind(resource)?.by === "key") this.#keyed.push(...informers);
      if (this.#signal) {
        for (const informer of informers) {
          if (informer.shard !== undefined && !this.#held.has(informer.shard)) continue;
          this.#runs.push(informer.run(this.#signal));
          // Nobody waits for a late informer's sync: a kind it may not read must still be heard of.
          informer.synced.catch((error) =>
            this.#options.log.error("cannot cache {kind}: {error}", {
              kind: resource.kind,
              error: (error as Error).message,
            })
          );
        }
      }
    }
    return informers as unknown as Informer<T>[];
  }

  /** A read-only view of the cache of `resource`. */
  cache<T extends KubeObject, N extends boolean>(resource: Resource<T, N>): CacheReader<T, N> {
    return new ScopedCache(this.informers<T>(resource)) as CacheReader<T, N>;
  }

  /** Subscribes to every change of `resource`; returns the unsubscribe function. */
  onChange<T extends KubeObject>(resource: Resource, handler: ChangeHandler<T>): () => void {
    const offs = this.informers<T>(resource).map((i) => i.onChange(handler));
    return () => offs.forEach((off) => off());
  }

  /** Starts every informer, now and later; they stop when `signal` aborts. */
  start(signal: AbortSignal): void {
    this.#signal = signal;
    for (const informer of this.all()) {
      if (informer.shard === undefined) this.#runs.push(informer.run(signal));
    }
  }

  /**
   * The caches of `shard`, once it is held: each lists (behind until then) and is kept current
   * until `stopShard`. The caches filtered by key list again with it.
   */
  startShard(shard: number): void {
    if (this.#held.has(shard) || !this.#signal) return;
    const stop = new AbortController();
    const signal = AbortSignal.any([this.#signal, stop.signal]);
    const runs = this.all().filter((i) => i.shard === shard).map((i) => i.resume(signal));
    this.#held.set(shard, { stop, runs });
    this.#rekey(`shard ${shard} was taken on`);
  }

  /** Stops the caches of `shard` and empties them (telling subscribers of each object). */
  async stopShard(shard: number): Promise<void> {
    const held = this.#held.get(shard);
    if (!held) return;
    this.#held.delete(shard);
    held.stop.abort();
    await Promise.all(held.runs);
    for (const informer of this.all()) if (informer.shard === shard) informer.clear();
    this.#rekey(`shard ${shard} was handed on`);
  }

  /** The shards whose caches run. */
  get heldShards(): number[] {
    return [...this.#held.keys()].sort((a, b) => a - b);
  }

  /** True once every cache of `shard` (and every cache every shard reads) is fresh. */
  shardFresh(shard: number): boolean {
    return this.all().every((i) => i.fresh || (i.shard !== undefined && i.shard !== shard));
  }

  /** The caches filtered by key keep another set of shards now: they list again. */
  #rekey(reason: string): void {
    for (const informer of this.#keyed) informer.recheck(reason);
  }

  /** The caches filtered by key (see PoolSharding). */
  readonly #keyed: Informer<KubeObject>[] = [];

  /** The same parts, keeping only objects in the namespaces watched. */
  #listedOnly(parts: (CachePart | undefined)[]): CachePart[] {
    const listed = new Set(this.#options.namespaces);
    const inListed = (object: KubeObject) => listed.has(object.metadata?.namespace ?? "");
    return parts.map((part) =>
      part ? { ...part, keeps: (object) => inListed(object) && part.keeps(object) } : {
        keeps: inListed,
      }
    );
  }

  /** The parts a kind's cache is made of (one, whole, when it does not follow the shards). */
  #parts(resource: Resource): (CachePart | undefined)[] {
    const sharding = this.#options.sharding;
    const how = sharding?.kind(resource);
    if (!sharding || !how) return [undefined];
    const { count } = sharding;
    const shards = Array.from({ length: count }, (_, shard) => shard);
    switch (how.by) {
      case "uid":
        return shards.map((shard) => ({
          shard,
          idle: true,
          query: () => ({
            shardSelector: sharding.serverSelects() ? shardSelector([shard], count) : undefined,
          }),
          keeps: (object) => {
            const uid = object.metadata?.uid;
            return uid !== undefined && shardOf(uid, count) === shard;
          },
        }));
      case "controller": {
        const { label, key } = how;
        const parts: CachePart[] = shards.map((shard) => {
          const [start, end] = bucketsOf(shard, count);
          const values = Array.from({ length: end - start }, (_, i) => bucketLabel(start + i));
          const mine = new Set(values);
          // One shard holds every bucket: any bucket will do.
          const whole = count === 1;
          return {
            shard,
            idle: true,
            query: () => ({
              labelSelector: whole ? label : `${label} in (${values.join(",")})`,
            }),
            keeps: (object) => {
              if (mine.has(object.metadata?.labels?.[label] ?? "")) return true;
              const parent = key(object);
              return parent !== undefined && shardOf(parent, count) === shard;
            },
          };
        });
        // What carries no bucket: no one's children, or children from before sharding.
        parts.push({
          query: () => ({ labelSelector: `!${label}` }),
          keeps: (object) => object.metadata?.labels?.[label] === undefined,
        });
        return parts;
      }
      case "key": {
        const part: CachePart = {
          keeps: (object) => {
            const key = how.key(object);
            return key === undefined || this.#held.has(shardOf(key, count));
          },
        };
        return [part];
      }
    }
  }

  /** Resolves when every informer of these kinds (all kinds by default) has listed once. */
  async synced(resources?: Resource[]): Promise<void> {
    const informers = resources
      ? resources.flatMap((r) => this.informers(r))
      : [...this.#informers.values()].flat();
    await Promise.all(informers.map((i) => i.synced));
  }

  /**
   * Why the caches that are behind are (empty when none is): for `/readyz`, which names them.
   */
  behind(): { kind: string; namespace?: string; forMs: number; reason: string }[] {
    const now = monotonicMs();
    return this.all().flatMap((i) =>
      i.behind && i.hasSynced
        ? [{
          kind: i.resource.kind,
          namespace: i.namespace,
          forMs: now - i.behind.since,
          reason: i.behind.reason,
        }]
        : []
    );
  }

  /**
   * Kinds whose cache is empty because the API server does not serve them (their CRD is
   * missing) or we may not read them (optional kinds), with why: for `/readyz`, which names them.
   */
  unavailable(): { resource: Resource; why: "not served" | "not allowed" }[] {
    const seen = new Map<string, { resource: Resource; why: "not served" | "not allowed" }>();
    for (const i of this.all()) {
      const why = i.unavailable;
      if (i.hasSynced && why && why !== "not watched") {
        seen.set(resourceId(i.resource), { resource: i.resource, why });
      }
    }
    return [...seen.values()];
  }

  /** True when every informer has listed once; for `/readyz`. */
  hasSynced(resources?: Resource[]): boolean {
    const informers = resources
      ? resources.flatMap((r) => this.informers(r))
      : [...this.#informers.values()].flat();
    return informers.every((i) => i.hasSynced);
  }

  /**
   * What `/readyz` says of the caches: `informers-synced` fails until each has listed, and while
   * one is behind (nothing is written from it until it has listed again), naming it and why;
   * `kinds-served` names kinds the API server does not serve (or we may not read) without
   * failing: an optional kind such as KMM's Module may be missing for good, and an unready pod
   * would lose its webhook endpoints.
   */
  checks(): ProbeChecks {
    return {
      readyz: {
        "informers-synced": () => {
          const pending = this.all().filter((i) => !i.hasSynced).map((i) => i.resource.kind);
          if (pending.length) return `waiting for ${[...new Set(pending)].join(", ")}`;
          const behind = this.behind().map((b) =>
            `${b.kind}${b.namespace ? ` in ${b.namespace}` : ""} behind for ${
              Math.round(b.forMs / 1000)
            } s (${b.reason})`
          );
          return behind.length ? behind.join("; ") : undefined;
        },
        "kinds-served": () => {
          const unavailable = this.unavailable();
          if (!unavailable.length) return undefined;
          return {
            note: unavailable.map(({ resource, why }) =>
              `${resource.kind} (${apiVersionOf(resource)}) ${
                why === "not served"
                  ? "is not served: is its CRD installed?"
                  : "may not be read: grant list and watch"
              }`
            ).join("; "),
          };
        },
      },
    };
  }

  /**
   * `informer_cache_objects{group,kind,selector}`: how many objects the caches of each kind hold
   * (all its namespaces and shards), counted when scraped.
   */
  exposeSizes(registry: Registry): void {
    const gauge = registry.gauge(
      "informer_cache_objects",
      "Objects held in the informer caches of a kind (its selectors, if scoped)",
      ["group", "kind", "selector"],
    );
    registry.onCollect(() => {
      for (const informers of this.#informers.values()) {
        const { group, kind, labelSelector, fieldSelector } = informers[0].resource;
        const selector = [labelSelector, fieldSelector].filter(Boolean).join(";");
        const size = informers.reduce((n, informer) => n + informer.store.size, 0);
        gauge.set({ group, kind, selector }, size);
      }
    });
  }

  /** Every informer, for status and tests. */
  all(): Informer<KubeObject>[] {
    return [...this.#informers.values()].flat();
  }

  /** Waits for every informer loop to end (after the start signal aborted). */
  async stopped(): Promise<void> {
    await Promise.all(this.#runs);
  }
}
