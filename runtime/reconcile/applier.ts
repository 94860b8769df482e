/**
 * Makes a reconcile's Outcome true in the cluster, writing only what a parent controls: creates
 * missing children, applies changed ones, replaces those whose immutable fields must change,
 * prunes the ones no longer wanted, writes the status, and stops any of that which loops.
 *
 * Why a child is never taken from someone else, even when the cache is behind:
 * - A child the cache does not have is *created* (POST), never applied: if someone created that
 *   name a moment ago, the API server refuses with 409 AlreadyExists and nothing is written.
 * - A child the cache shows under our controller reference is applied with its `metadata.uid`
 *   as a precondition: if it was deleted and replaced by someone else's object meanwhile, the
 *   API server refuses (409 or 422). If someone else made themselves its controller meanwhile,
 *   our apply would add a second controller reference, which the API server refuses as well.
 * - Anything else named like a child (controlled by another object, or by nobody) is left alone
 *   and reported, unless the plugin opted in to adopting that kind.
 * - Pruning deletes with the child's uid as a precondition.
 *
 * A child is wholly ours: what other field managers add to its body is taken out again, with a
 * Warning Event naming the fields and who set them (the argument, and what is tolerated, is in
 * foreign_fields.ts). A child whose managedFields have no entry of ours (someone cleared them) is
 * applied again, after which the API server attributes everything else to `before-first-apply`.
 *
 * A child is created by a create-only apply, its fields owned as applied. One 0.2 made by `POST`
 * has them in an "Update" entry of ours, which no apply lets go of (a dropped field would stay):
 * before its first apply that entry is relabelled "Apply" (as kubectl's client-side-apply upgrade
 * does), once, guarded by the uid and the entry itself.
 */
import type { KubeClient } from "../../kube/client.ts";
import type { KubeObject } from "../../kube/object.ts";
import { type ObjectRef, objectRef, refKey } from "../../kube/object_ref.ts";
import { isApiError } from "../../kube/errors.ts";
import { apiVersionOf, type Resource } from "../../kube/resource.ts";
import type { ControllerMetrics } from "./controller_metrics.ts";
import { childUpToDate, differingPath, isSubset, stampChild } from "./desired_state.ts";
import { fieldManagerOf, formerTracesOf, type OperatorIdentity } from "../identity/mod.ts";
import type { EventRecorder, Logger } from "../observe/mod.ts";
import { describeForeign, foreignFields } from "./foreign_fields.ts";
import type { PoolReader } from "../cache/mod.ts";
import { type FormerTraces, handOver, madeUnderFormer } from "./hand_over.ts";
import { childProblem, controllerOf, ownershipOf } from "./ownership.ts";
import {
  type ChildProblem,
  type OwnedKind,
  PermanentError,
  TemporaryError,
} from "../plugin/mod.ts";
import type { WriteLoopGuard } from "./write_loop_guard.ts";
import { ChildWriter } from "./child_writer.ts";
import type { DryRunReport } from "./dry_run_report.ts";
import { WriteBudget } from "./write_budget.ts";

/**
 * What an Applier writes with and reports to: the plugin, the client, the caches, Events, metrics
 * and the write-loop guard.
 */
export interface ApplierDeps {
  /** The plugin's name: label value, metrics label, and its field manager's. */
  name: string;
  /** Whose runtime this is: the names of its field managers, labels and annotations. */
  operator: OperatorIdentity;
  /** The kind the plugin reconciles (its status is written there). */
  for: Resource;
  /** The kinds the plugin owns, each with whether to adopt, recreate and tolerate (OwnedKind). */
  owns: OwnedKind[];
  /** The client writes go through (fenced, when the applier is `using` one). */
  client: KubeClient;
  /** The caches children are looked up in. */
  pool: PoolReader;
  /** Where the Warning Events about children that could not be written go. */
  events: EventRecorder;
  /** Where writes refused as loops are counted. */
  metrics: ControllerMetrics;
  /** Stops a child (or status) that is rewritten again and again without a spec change. */
  guard: WriteLoopGuard;
  /**
   * Labels the runtime puts on every child of `parent` besides the plugin's (a ring's shard
   * bucket, by which the caches of the parent's shard ask for its children). With them, a child
   * the caches do not show may still exist (its label edited, so it is in no cache of ours): a
   * create refused as AlreadyExists looks it up once.
   */
  childLabels?: (parent: KubeObject) => Record<string, string>;
  /**
   * Told of a child this plugin just created for `parent` whose answer is already what the plugin
   * wants: its appearance in the cache needs no visit of the parent (see Controller).
   */
  created?: (parent: ObjectRef, child: KubeObject) => void;
  /**
   * Told of a child this plugin just applied whose answer is what the plugin wants (or just
   * relabelled, on the way to that apply): the watch's echo of it needs no visit of the parent.
   */
  applied?: (child: KubeObject) => void;
  /** Told of the parent as a status write of this plugin left it. */
  statusWritten?: (parent: KubeObject) => void;
  /**
   * A dry run (its client sends every write as a server-side dry run): what would change is told
   * here, the status is not written at all, and nothing goes into the cache.
   */
  dryRun?: DryRunReport;
}

/** What applying the children did. */
export interface ChildrenResult {
  /** Children that could not be written (each also reported as a Warning Event). */
  problems: ChildProblem[];
  /**
   * Keys (`refKey`) of children whose names are taken by objects we do not control: when such an
   * object changes or goes, the parent is looked at again.
   */
  blocked: string[];
  /** The soonest a refused (looping) write may be tried again, if one was refused. */
  retryInMs?: number;
}

/**
 * Makes a reconcile's Outcome true, writing only what the parent controls (see the module doc); one
 * per controller.
 */
export class Applier {
  readonly #deps: ApplierDeps;
  /** The plugin's field manager: what it applies is its own, and nobody else's. */
  readonly #manager: string;
  readonly #writer: ChildWriter;
  readonly #budget: WriteBudget;
  /** What its children carry when made under an identity the operator takes over from. */
  readonly #former: FormerTraces;

  /** An applier for one plugin; its field manager is named after the plugin. */
  constructor(deps: ApplierDeps) {
    this.#deps = deps;
    this.#manager = fieldManagerOf(deps.operator, deps.name);
    this.#writer = new ChildWriter({ ...deps, manager: this.#manager, dryRun: !!deps.dryRun });
    this.#budget = new WriteBudget(deps);
    this.#former = formerTracesOf(deps.operator, deps.name);
  }

  /** The same applier writing through `client` (one reconcile's, fenced by its caches). */
  using(client: KubeClient): Applier {
    return new Applier({ ...this.#deps, client });
  }

  /**
   * Makes `children` exist as desired and prunes the children no longer among them. A child that
   * cannot be written is reported (Event, and in the result) and the others go on.
   */
  async applyChildren(
    parent: KubeObject,
    children: KubeObject[],
    signal: AbortSignal,
    log: Logger,
  ): Promise<ChildrenResult> {
    const result: ChildrenResult = { problems: [], blocked: [] };
    const parentRef = objectRef(this.#deps.for, parent);
    const report = (problem: Omit<ChildProblem, "plugin">, event = true) => {
      result.problems.push({ plugin: this.#deps.name, ...problem });
      if (!event) return;
      this.#deps.events.record(parent, {
        type: "Warning",
        reason: problem.reason,
        message: problem.message,
      });
    };
    const wanted = new Set<string>();
    for (const desired of children) {
      const kind = this.#ownedKind(desired);
      const { resource } = kind;
      if (!this.#deps.pool.informers(resource).every((i) => i.installed)) {
        throw new TemporaryError(
          `${resource.kind} (${
            apiVersionOf(resource)
          }) is not served by the API server; is its CRD installed?`,
          { retryAfterMs: 30_000 },
        );
      }
      const stamped = stampChild(
        desired,
        parent,
        this.#deps.name,
        this.#deps.operator,
        this.#deps.childLabels?.(parent),
      );
      const child = objectRef(resource, stamped);
      const { name, namespace } = child;
      const id = refKey(child);
      wanted.add(id);
      let cached = this.#deps.pool.cache(resource).get(namespace, name);
      const ownership = ownershipOf(cached, parentRef);
      const adopting = ownership.state === "uncontrolled" && Boolean(kind.adopt);
      const problem = adopting
        ? undefined
        : childProblem(this.#deps.name, resource, cached, parentRef);
      if (problem) {
        result.blocked.push(id);
        report(problem);
        continue;
      }
      // Being deleted (a replacement, or someone's foreground delete): made anew once it is gone.
      if (cached?.metadata?.deletionTimestamp) continue;
      const label = `${resource.kind} ${name}`;
      /** A write the guard refused: reported without an Event (it went out when the loop was found). */
      const paused = (retryInMs: number, message: string) => {
        result.retryInMs = Math.min(result.retryInMs ?? Infinity, retryInMs);
        report({ kind: resource.kind, name, reason: "WriteLoopDetected", message }, false);
      };
      // Made under an identity the operator takes over from: its field sets become ours first.
      if (ownership.state === "ours" && madeUnderFormer(cached!, this.#deps.name, this.#former)) {
        if (this.#deps.dryRun) {
          this.#would(parent, "take-over", label, "made under a former identity");
        } else {
          const taker = { ...this.#deps, manager: this.#manager, traces: this.#former };
          cached = await handOver(resource, cached!, { ...taker, parent, signal });
          this.#writer.observe(resource, cached);
        }
      }
      // Additions first: a foreign list item also makes the child look out of date, and applying
      // again cannot take it out.
      const claimed = ownership.state === "ours" && this.#claimed(cached!);
      // Other plugins' entries carry no field sets in the cache (slim.ts), so they count as ours.
      const foreign = claimed
        ? foreignFields(cached!, stamped, {
          ours: new Set([this.#manager]),
          tolerate: kind.tolerate,
        })
        : [];
      if (foreign.length) {
        const allowed = this.#budget.check(
          parent,
          child,
          label,
          () => `someone keeps adding ${describeForeign(foreign, 3)}`,
        );
        if (allowed !== true) {
          paused(
            allowed,
            `${label}: someone keeps adding fields the operator removes ` +
              `(${describeForeign(foreign, 3)}); writes to it are paused`,
          );
          continue;
        }
        await this.#writer.removeForeign(parent, kind, cached!, foreign, signal, log);
        this.#would(parent, "remove-fields", label, describeForeign(foreign, 3));
        // Taken out (or the child deleted to be made anew): a write, which a fight repeats.
        this.#counted(parent, child);
        continue;
      }
      if (claimed && childUpToDate(stamped, cached, this.#deps.operator)) continue;
      const allowed = this.#budget.check(
        parent,
        child,
        label,
        () => describeChange(stamped, cached, this.#deps.operator),
      );
      if (allowed !== true) {
        paused(
          allowed,
          `${label} keeps being rewritten without a change to the spec; writes to it are paused`,
        );
        continue;
      }
      let verb: "Created" | "Updated" | "Adopted" | "Replaced";
      let detail = "";
      try {
        if (!cached) {
          const taken = await this.#writer.create(resource, stamped, parentRef, signal);
          if (taken) {
            result.blocked.push(id);
            report(taken);
            continue;
          }
          verb = "Created";
          this.#counted(parent, child);
        } else {
          // Unclaimed (adopted, or its entries cleared): what the answer shows is looked at again.
          const written = await this.#writer.update(kind, stamped, cached, signal, !claimed);
          const { replaced, changed } = written;
          verb = replaced ? "Replaced" : adopting ? "Adopted" : "Updated";
          if (replaced) detail = `: ${replaced}, so it is deleted and created anew`;
          // A write the server found nothing to change in (our cache was behind) is no write. (A
          // dry run's answer keeps its resourceVersion: that it was decided on is what it says.)
          if (!changed && !this.#deps.dryRun) continue;
          this.#counted(parent, child);
        }
      } catch (error) {
        if (notServed(error)) {
          // Its CRD is being deleted, or is gone: the cache must learn so now (and the
          // plugins with it, through `installed`), not at its next relist.
          for (const informer of this.#deps.pool.informers(resource)) {
            informer.recheck(`a write was refused: ${(error as Error).message}`);
          }
          throw new TemporaryError(
            `${resource.kind} (${apiVersionOf(resource)}) is not served by the API server any ` +
              `more (is its CRD being deleted?): ${(error as Error).message}`,
            { retryAfterMs: 2_000, cause: error },
          );
        }
        // Invalid for the API server (a value the CRD let through, an immutable field, a value of
        // the wrong type, which server-side apply answers with a 500): retrying the same object
        // cannot help; the parent or the plugin must change.
        const mistyped = /typed patch object|cannot unmarshal/.test((error as Error).message) &&
          (isApiError(error, 500) || isApiError(error, 400));
        if (!isApiError(error, 422) && !isApiError(error, 400) && !mistyped) throw error;
        const causes = error.causes.map((c) => `${c.field ?? ""} ${c.message ?? ""}`.trim());
        const message = `plugin ${this.#deps.name}: the API server refused ${label}: ${
          causes.length ? causes.join("; ") : error.message
        }${mistyped ? " (a field of the wrong type: does the plugin's module type-check?)" : ""}`;
        log.warn("{message}", { message, kind: resource.kind, child: name });
        report({ kind: resource.kind, name, reason: "ChildRefused", message });
        continue;
      }
      if (this.#deps.dryRun) {
        const would = verb === "Created" ? "create" : verb === "Replaced" ? "replace" : "update";
        this.#would(
          parent,
          would,
          label,
          would === "create" ? undefined : describeChange(stamped, cached, this.#deps.operator),
        );
        continue;
      }
      log.info("{verb} {kind} {child}", {
        verb: verb.toLowerCase(),
        kind: resource.kind,
        child: name,
      });
      // What a parent never reported on asked for is no news: its status will say so. A child
      // made again (someone deleted it), put back, replaced or adopted is, and gets an Event.
      if (verb !== "Created" || (parent as { status?: unknown }).status !== undefined) {
        this.#deps.events.record(parent, {
          type: "Normal",
          reason: verb,
          message: `${verb} ${label}${detail}`,
        });
      }
    }
    await this.#prune(parent, wanted, signal, log);
    return result;
  }

  /** Writes `status` (plus `observedGeneration`) unless the cache shows it already. */
  async applyStatus(
    parent: KubeObject,
    status: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<{ retryInMs?: number }> {
    const desired = { ...status, observedGeneration: parent.metadata?.generation };
    const current = (parent as { status?: unknown }).status;
    if (isSubset(desired, current)) return {};
    if (this.#deps.dryRun) {
      const change = describeChange({ status: desired }, { status: current }, this.#deps.operator);
      this.#would(parent, "status", "status", change);
      return {};
    }
    const allowed = this.#budget.check(
      parent,
      undefined,
      "the status",
      () => describeChange({ status: desired }, { status: current }, this.#deps.operator),
    );
    if (allowed !== true) return { retryInMs: allowed };
    const meta = parent.metadata!;
    try {
      const written = await this.#deps.client.apply(this.#deps.for, {
        apiVersion: parent.apiVersion,
        kind: parent.kind,
        metadata: { name: meta.name, namespace: meta.namespace, uid: meta.uid },
        status: desired,
      } as KubeObject, {
        subresource: "status",
        fieldManager: this.#manager,
        force: true,
        signal,
      });
      this.#deps.statusWritten?.(written);
      for (const informer of this.#deps.pool.informers(this.#deps.for)) informer.observe(written);
      if (written.metadata?.resourceVersion !== meta.resourceVersion) this.#counted(parent);
    } catch (error) {
      // Server-side apply refuses fields the schema does not declare; retrying cannot help.
      if (error instanceof Error && /not declared in schema/.test(error.message)) {
        throw new PermanentError(
          `${this.#deps.for.kind} status could not be written: ${error.message}. Declare every ` +
            `status field the plugin returns in the CRD's status schema, and observedGeneration ` +
            `(integer), which the runtime adds`,
          { reason: "StatusSchemaMismatch", cause: error },
        );
      }
      throw error;
    }
    return {};
  }

  /** Counts a write that succeeded and changed something (a dry run's changed nothing). */
  #counted(parent: KubeObject, child?: ObjectRef): void {
    if (!this.#deps.dryRun) this.#budget.wrote(parent, child);
  }

  /** In a dry run, tells the report what would change of `parent`'s world. */
  #would(parent: KubeObject, verb: string, what: string, detail?: string): void {
    const report = this.#deps.dryRun;
    if (!report) return;
    const meta = parent.metadata ?? {};
    const kind = this.#deps.for.kind;
    const object = `${kind} ${meta.namespace ? `${meta.namespace}/` : ""}${meta.name}`;
    report.would(object, kind, { verb, what, detail, controller: this.#deps.name });
  }

  #ownedKind(child: KubeObject): OwnedKind {
    const kind = this.#deps.owns.find((o) =>
      o.resource.kind === child.kind && apiVersionOf(o.resource) === child.apiVersion
    );
    if (!kind) {
      throw new PermanentError(
        `${this.#deps.name} returned a ${child.apiVersion} ${child.kind}, which is not in its ` +
          `owns list`,
        { reason: "PluginError" },
      );
    }
    return kind;
  }

  /** True when a field set of ours is among the child's managed fields (nobody cleared them). */
  #claimed(cached: KubeObject): boolean {
    return (cached.metadata?.managedFields ?? []).some((e) =>
      e.manager === this.#manager && !e.subresource
    );
  }

  /** Deletes the children this plugin made for `parent` that are no longer wanted. */
  async #prune(
    parent: KubeObject,
    wanted: Set<string>,
    signal: AbortSignal,
    log: Logger,
  ): Promise<void> {
    const uid = parent.metadata!.uid!;
    for (const { resource } of this.#deps.owns) {
      for (const object of this.#deps.pool.cache(resource).ownedBy(uid)) {
        const meta = object.metadata!;
        if (
          controllerOf(object)?.uid !== uid ||
          (meta.labels?.[this.#deps.operator.pluginLabel] !== this.#deps.name &&
            !madeUnderFormer(object, this.#deps.name, this.#former))
        ) {
          continue;
        }
        const child = objectRef(resource, object);
        if (wanted.has(refKey(child))) continue;
        const allowed = this.#budget.check(
          parent,
          child,
          `${resource.kind} ${meta.name}`,
          () => "it is deleted and wanted again in turn",
        );
        if (allowed !== true) continue;
        await this.#writer.delete(resource, object, signal);
        this.#counted(parent, child);
        if (this.#deps.dryRun) {
          this.#would(parent, "delete", `${resource.kind} ${meta.name}`, "no longer desired");
          continue;
        }
        log.info("deleted {kind} {child}, no longer desired", {
          kind: resource.kind,
          child: meta.name,
        });
        this.#deps.events.record(parent, {
          type: "Normal",
          reason: "Deleted",
          message: `Deleted ${resource.kind} ${meta.name}, no longer desired`,
        });
      }
    }
  }
}

/**
 * Where a write would change `current`, for the write-loop report: the body first, then labels
 * and annotations, never our own bookkeeping (the hash follows whatever changed).
 */
export function describeChange(
  desired: KubeObject | Record<string, unknown>,
  current: unknown,
  operator: Pick<OperatorIdentity, "hashAnnotation">,
): string {
  const { metadata, ...body } = desired as KubeObject;
  const actual = (current ?? {}) as KubeObject;
  const annotations = { ...metadata?.annotations };
  delete annotations[operator.hashAnnotation];
  const path = differingPath(body, actual) ??
    differingPath(
      { metadata: { labels: metadata?.labels ?? {}, annotations } },
      { metadata: actual.metadata ?? {} },
    );
  return path ? `it keeps changing at ${path}` : "it keeps being rewritten";
}

/**
 * True when a write was refused because the kind itself is not served: its CRD is being deleted
 * (405, "not allowed while custom resource definition is terminating") or gone (404 naming no
 * object, unlike a 404 about a missing namespace or object).
 */
export function notServed(error: unknown): boolean {
  return isApiError(error, 405) || (isApiError(error, 404) && !error.details?.name);
}
