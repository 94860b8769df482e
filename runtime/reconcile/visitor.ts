/**
 * One visit of a key: looks at the caches and the object, runs the plugin's `reconcile` (or
 * `finalize`), and makes its Outcome true through the applier. Never throws for what the plugin or
 * the API server did: that is the visit's outcome, which `nextStep` turns into what happens next.
 */
import type { KubeClient } from "../../kube/client.ts";
import type { WriteSample } from "../../kube/request_sender.ts";
import { isApiError } from "../../kube/errors.ts";
import type { KubeObject, Stored } from "../../kube/object.ts";
import type { ObjectRef } from "../../kube/object_ref.ts";
import { type Informer, type InformerPool, StaleCacheError } from "../cache/mod.ts";
import type { EventInput, EventRecorder, Logger } from "../observe/mod.ts";
import { type Outcome, PermanentError, type Plugin, type ReconcileContext } from "../plugin/mod.ts";
import type { PluginRunner, VisitDeadline } from "../isolation/mod.ts";
import type { OperatorIdentity } from "../identity/mod.ts";
import type { Applier } from "./applier.ts";
import type { BlockedNames } from "./blocked_names.ts";
import type { DryRunReport } from "./dry_run_report.ts";
import type { ChildProblems } from "./child_problems.ts";
import type { ControllerMetrics } from "./controller_metrics.ts";
import { finalizerOf, hasFinalizer, setFinalizer } from "./finalizer.ts";
import type { FinalizedVersions } from "./finalized_versions.ts";
import type { Visit } from "./next_step.ts";
import type { PluginView } from "./plugin_view.ts";
import type { KeyClaim, KeyClaims } from "./key_claims.ts";

/** A visit, with what the step after it needs. */
export interface Visited<T extends KubeObject> {
  visit: Visit;
  /** The object, when it was there. */
  object?: Stored<T>;
  /** The caches to wait for, when the step parks the key. */
  behind?: Informer[];
  /** The finalizer, for the line that says it was removed. */
  finalizer?: string;
}

/** Told what a visit did, as it does it: for its record (`explain`) and its trace. */
export interface VisitRecorder {
  /** A write the visit made, once answered. */
  wrote(write: WriteSample): void;
  /** An Event the visit recorded. */
  event(event: EventInput): void;
  /** The conditions of the status it wrote. */
  status(conditions: unknown): void;
}

/** What a visit uses. */
export interface VisitorDeps {
  operator: OperatorIdentity;
  client: KubeClient;
  pool: Pick<InformerPool, "cache" | "informers">;
  events: EventRecorder;
  metrics: ControllerMetrics;
  problems: ChildProblems;
  runner: PluginRunner;
  applier: Applier;
  view: PluginView;
  blocked: BlockedNames;
  finalized: FinalizedVersions;
  /** The caches of every kind the plugin declared: its reconciles are decided from them. */
  reads: Informer[];
  claims?: KeyClaims;
  /** A dry run: finalizers are neither added nor run and removed; the report is told instead. */
  dryRun?: DryRunReport;
  log: Logger;
}

export class Visitor<T extends KubeObject> {
  readonly #plugin: Plugin<T>;
  readonly #deps: VisitorDeps;

  constructor(plugin: Plugin<T>, deps: VisitorDeps) {
    this.#plugin = plugin;
    this.#deps = deps;
  }

  /** In a dry run, tells the report what would change of `object`. */
  #would(object: Stored<T>, verb: string, what: string): void {
    const kind = this.#plugin.for.kind;
    const { namespace, name } = object.metadata;
    this.#deps.dryRun?.would(`${kind} ${namespace ? `${namespace}/` : ""}${name}`, kind, {
      verb,
      what,
      controller: this.#plugin.name,
    });
  }

  /** Visits `parent` (queue key `key`) within `deadline`, telling `recorder` what it does. */
  async visit(
    parent: ObjectRef,
    key: string,
    deadline: VisitDeadline,
    recorder?: VisitRecorder,
  ): Promise<Visited<T>> {
    const { pool, claims } = this.#deps;
    // Nothing is decided from a cache that may have missed changes (a parent deleted during an
    // outage, whose children would be made again): the key waits until it has listed again.
    const object = pool.cache(this.#plugin.for).get(parent.namespace, parent.name) as
      | Stored<T>
      | undefined;
    if (!object) {
      const behind = this.#deps.reads.filter((informer) => !informer.fresh);
      if (behind.length) return { visit: { kind: "behind" }, behind };
      return { visit: { kind: "gone" } };
    }
    const claim = claims?.claim(object.metadata.uid);
    if (claims && !claim) return { visit: { kind: "elsewhere" } };
    try {
      return await this.#visitClaimed(object, parent, key, deadline, claim, recorder);
    } finally {
      claim?.release();
    }
  }

  /** A visit of an object this replica may reconcile now (its shard's, with a ring). */
  async #visitClaimed(
    object: Stored<T>,
    parent: ObjectRef,
    key: string,
    deadline: VisitDeadline,
    claim: KeyClaim | undefined,
    recorder: VisitRecorder | undefined,
  ): Promise<Visited<T>> {
    const { pool, events, metrics, problems, operator, view } = this.#deps;
    const plugin = this.#plugin;
    // The caches of other shards hold none of this key's world.
    const mine = (informer: Informer) =>
      informer.shard === undefined || informer.shard === claim?.shard;
    const reads = this.#deps.reads.filter(mine);
    const behind = reads.filter((informer) => !informer.fresh);
    if (behind.length) return { visit: { kind: "behind" }, behind };
    // A shard lost or handed over: the visit's writes are refused at once, and its signal aborts
    // as on lost leadership.
    const fenced = claim ? this.#deps.client.fenced(claim.fence) : this.#deps.client;
    const client = recorder ? fenced.observed((write) => recorder.wrote(write)) : fenced;
    if (claim) deadline.follow(claim.signal);
    const finalizer = plugin.finalize ? finalizerOf(plugin, operator) : undefined;
    const deleting = !!object.metadata.deletionTimestamp;
    const finalizing = deleting && !!finalizer && hasFinalizer(object, plugin, operator);
    if (deleting && !finalizing) return { visit: { kind: "deleting" }, object };
    if (finalizing && this.#deps.dryRun) {
      this.#would(object, "finalizer", `run finalize and remove ${finalizer}`);
      return { visit: { kind: "deleting" }, object };
    }
    const fresh = freshnessFence(reads);
    // Past its deadline a visit writes nothing more, even if the plugin's code still runs.
    const writer = client.fenced(fresh.fence).fenced(deadline.fence);
    const context: ReconcileContext = {
      client: writer,
      cache: (resource) => {
        // A kind read on demand: its writes wait for its cache as much as for the declared ones.
        for (const informer of pool.informers(resource).filter(mine)) fresh.read(informer);
        return view.reader(resource, pool.cache(resource));
      },
      installed: (resource) => pool.informers(resource).every((i) => i.installed),
      problems: () => problems.get(parent),
      log: this.#deps.log.with({ object: key }),
      events: recorder
        ? {
          record: (about, event) => {
            recorder.event(event);
            events.record(about, event);
          },
        }
        : events,
      metrics: metrics.registry,
      signal: deadline.signal,
    };
    const visited = (visit: Visit): Visited<T> => ({
      visit,
      object,
      finalizer,
      behind: visit.kind === "failed" && visit.error instanceof StaleCacheError
        ? [visit.error.informer]
        : undefined,
    });
    if (finalizing) return visited(await this.#finalize(key, object, context, client, deadline));
    try {
      return visited(
        await this.#reconcile(parent, key, object, finalizer, context, writer, deadline, recorder),
      );
    } catch (error) {
      const cancelled = deadline.signal.aborted && !deadline.expired;
      return visited({ kind: "failed", error, cancelled });
    }
  }

  /**
   * Deletion has started and our finalizer holds the object: the plugin cleans up, then the
   * finalizer goes and the object with it.
   */
  async #finalize(
    key: string,
    object: Stored<T>,
    context: ReconcileContext,
    client: KubeClient,
    deadline: VisitDeadline,
  ): Promise<Visit> {
    const { finalized, operator, runner, view } = this.#deps;
    // Woken (say, by a change its own finalize made) before the cache saw the finalizer go: the
    // object is leaving, and finalizing it again would repeat the cleanup.
    if (finalized.finalized(key, object.metadata)) return { kind: "finalized-already" };
    try {
      await runner.finalize(view.object(this.#plugin.for, object), context, deadline);
      try {
        await setFinalizer(client, this.#plugin.for, object, this.#plugin, operator, {
          present: false,
          signal: context.signal,
        });
      } catch (error) {
        // Gone already: the finalizer was removed meanwhile (by hand, or by a former leader).
        if (!isApiError(error, 404)) throw error;
      }
      finalized.remember(key, object.metadata);
      return { kind: "finalized" };
    } catch (error) {
      const cancelled = context.signal.aborted && !deadline.expired;
      return { kind: "finalize-failed", error, cancelled };
    }
  }

  /** The plugin's reconcile, and its Outcome made true. */
  async #reconcile(
    parent: ObjectRef,
    key: string,
    object: Stored<T>,
    finalizer: string | undefined,
    context: ReconcileContext,
    writer: KubeClient,
    deadline: VisitDeadline,
    recorder: VisitRecorder | undefined,
  ): Promise<Visit> {
    const { problems, operator, runner, view, applier, blocked } = this.#deps;
    const plugin = this.#plugin;
    const { signal, log } = context;
    if (finalizer && !hasFinalizer(object, plugin, operator)) {
      if (this.#deps.dryRun) {
        this.#would(object, "finalizer", `add ${finalizer}`);
      } else {
        // Before anything is made outside Kubernetes, so that nothing can outlive the object.
        await setFinalizer(writer, plugin.for, object, plugin, operator, {
          present: true,
          signal,
        });
        log.debug("added finalizer {finalizer}", { finalizer });
      }
    }
    const outcome: Outcome =
      (await runner.reconcile(view.object(plugin.for, object), context, deadline)) ?? {};
    const writes = applier.using(writer);
    let pausedForMs: number | undefined;
    if (outcome.children) {
      const applied = await writes.applyChildren(object, outcome.children, signal, log);
      problems.set(parent, plugin.name, applied.problems);
      for (const id of applied.blocked) blocked.wait(id, key);
      pausedForMs = applied.retryInMs;
      const refused = applied.problems.some((p) => p.reason !== "WriteLoopDetected");
      if (refused && pausedForMs === undefined) return { kind: "refused" };
    }
    if (outcome.status) {
      if (plugin.writesStatus === false) {
        throw new PermanentError(
          `plugin ${plugin.name} returned a status but declares writesStatus: false`,
          { reason: "UndeclaredStatus" },
        );
      }
      const status = await writes.applyStatus(object, outcome.status, signal);
      recorder?.status(outcome.status.conditions);
      pausedForMs = Math.min(pausedForMs ?? Infinity, status.retryInMs ?? Infinity);
    }
    return {
      kind: "reconciled",
      requeueAfterMs: outcome.requeueAfterMs,
      pausedForMs: Number.isFinite(pausedForMs) ? pausedForMs : undefined,
      returnedChildren: outcome.children !== undefined,
    };
  }
}

/** What the fence needs of a cache. */
type Freshness = Pick<Informer, "fresh" | "epoch">;

/**
 * The write fence of one reconcile: every cache it read (the declared ones at once, others as
 * they are read) must be fresh and not have fallen behind since, right before each write leaves.
 */
export function freshnessFence(
  declared: Freshness[],
): { fence: () => void; read: (informer: Freshness) => void } {
  const epochs = new Map(declared.map((informer) => [informer, informer.epoch]));
  return {
    read: (informer) => {
      if (!epochs.has(informer)) epochs.set(informer, informer.epoch);
    },
    fence: () => {
      for (const [informer, epoch] of epochs) {
        if (!informer.fresh || informer.epoch !== epoch) {
          throw new StaleCacheError(informer as Informer);
        }
      }
    },
  };
}
