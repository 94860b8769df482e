/**
 * Shares informers between plugins: one LIST+WATCH per kind and namespace scope, however many
 * plugins read or watch that kind.
 */
import type { KubeClient } from "../../kube/client.ts";
import type { KubeObject, Stored } from "../../kube/object.ts";
import { apiVersionOf, type Resource } from "../../kube/resource.ts";
import { monotonicMs } from "../../util/clock.ts";
import { type ChangeHandler, Informer } from "./informer.ts";
import type { Selector } from "./label_selector.ts";
import { type Logger, type ProbeChecks, WarningThrottle } from "../observe/mod.ts";
import type { CacheReader } from "./store.ts";

export interface InformerPoolOptions {
  /** Watch only these namespaces (namespaced kinds); all when absent or empty. */
  namespaces?: string[];
  log: Logger;
  /** Passed to every informer; see InformerOptions. */
  silenceTimeoutMs?: number;
  missingKindRetryMs?: number;
  /**
   * The kinds plugins write as children, and the runtime's field managers (the plugins' names):
   * their caches keep other managers' field sets, so additions to a child can be seen.
   */
  children?: { resources: Resource[]; managers: ReadonlySet<string> };
}

/** One informer (per namespace) for each kind and selectors. */
function resourceId(resource: Resource): string {
  const { group, version, plural, labelSelector = "", fieldSelector = "" } = resource;
  return `${group}/${version}/${plural}?${labelSelector}&${fieldSelector}`;
}

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

  list(options: { namespace?: string; labelSelector?: string | Selector } = {}): Stored<T>[] {
    return this.informers
      .filter((i) => !options.namespace || !i.namespace || i.namespace === options.namespace)
      .flatMap((i) => i.store.list(options));
  }

  ownedBy(uid: string): Stored<T>[] {
    return this.informers.flatMap((i) => i.store.ownedBy(uid));
  }
}

export class InformerPool {
  readonly #client: KubeClient;
  readonly #options: InformerPoolOptions;
  readonly #informers = new Map<string, Informer<KubeObject>[]>();
  #signal?: AbortSignal;
  readonly #runs: Promise<void>[] = [];
  readonly #warnings: WarningThrottle;

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
      const scopes = resource.namespaced && restricted ? this.#options.namespaces! : [undefined];
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
      informers = scopes.map((namespace) =>
        new Informer(this.#client, resource, {
          namespace,
          skipped,
          optional: use.optional,
          log: this.#options.log,
          warnings: this.#warnings,
          silenceTimeoutMs: this.#options.silenceTimeoutMs,
          missingKindRetryMs: this.#options.missingKindRetryMs,
          slim,
        })
      );
      this.#informers.set(id, informers);
      if (this.#signal) {
        for (const informer of informers) {
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
    for (const informers of this.#informers.values()) {
      for (const informer of informers) this.#runs.push(informer.run(signal));
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

  /** Every informer, for status and tests. */
  all(): Informer<KubeObject>[] {
    return [...this.#informers.values()].flat();
  }

  /** Waits for every informer loop to end (after the start signal aborted). */
  async stopped(): Promise<void> {
    await Promise.all(this.#runs);
  }
}
