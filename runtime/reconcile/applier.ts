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
 * A created object's fields belong to an "Update" entry of our field manager, which server-side
 * apply never lets go of: a field later dropped from the desired object would stay for good.
 * Before the first apply to a child we created, that entry is relabelled "Apply" (what kubectl's
 * client-side-apply upgrade does), once, guarded by the uid and the entry itself.
 */
import type { KubeClient } from "../../kube/client.ts";
import type { KubeObject } from "../../kube/object.ts";
import { type ObjectRef, objectRef, refKey } from "../../kube/object_ref.ts";
import { isApiError } from "../../kube/errors.ts";
import { apiVersionOf, type Resource, resourcePath } from "../../kube/resource.ts";
import type { ControllerMetrics } from "./controller_metrics.ts";
import { childUpToDate, differingPath, isSubset, stampChild } from "./desired_state.ts";
import { fieldManagerOf, formerTracesOf, type OperatorIdentity } from "../identity/mod.ts";
import type { EventRecorder, Logger } from "../observe/mod.ts";
import {
  describeForeign,
  type ForeignField,
  foreignFields,
  removalPatch,
} from "./foreign_fields.ts";
import type { PoolReader } from "../cache/mod.ts";
import { type FormerTraces, handOver, madeUnderFormer } from "./hand_over.ts";
import { childProblem, controllerOf, ownershipOf } from "./ownership.ts";
import {
  type ChildProblem,
  type OwnedKind,
  PermanentError,
  TemporaryError,
} from "../plugin/mod.ts";
import type { WriteLoopGuard, WriteTarget } from "./write_loop_guard.ts";

export interface ApplierDeps {
  /** The plugin's name: label value, metrics label, and its field manager's. */
  name: string;
  /** Whose runtime this is: the names of its field managers, labels and annotations. */
  operator: OperatorIdentity;
  /** The kind the plugin reconciles (its status is written there). */
  for: Resource;
  owns: OwnedKind[];
  client: KubeClient;
  pool: PoolReader;
  events: EventRecorder;
  metrics: ControllerMetrics;
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
}

/** What applying the children did. */
export interface ChildrenResult {
  /** Children that could not be written (each also reported as a Warning Event). */
  problems: ChildProblem[];
  /**
   * Keys (`refKey`) of children whose names are taken by objects we do not control: when such an
   * object changes   * or goes, the parent is looked at again.
   */
  blocked: string[];
  /** The soonest a refused (looping) write may be tried again, if one was refused. */
  retryInMs?: number;
}

export class Applier {
  readonly #deps: ApplierDeps;
  /** The plugin's field manager: what it applies is its own, and nobody else's. */
  readonly #manager: string;
  /** What its children carry when made under an identity the operator takes over from. */
  readonly #former: FormerTraces;

  constructor(deps: ApplierDeps) {
    this.#deps = deps;
    this.#manager = fieldManagerOf(deps.operator, deps.name);
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
        const taker = { ...this.#deps, manager: this.#manager, traces: this.#former };
        cached = await handOver(resource, cached!, { ...taker, parent, signal });
        this.#observe(resource, cached);
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
        const allowed = this.#mayWrite(
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
        await this.#removeForeign(parent, kind, cached!, foreign, signal, log);
        // Taken out (or the child deleted to be made anew): a write, which a fight repeats.
        this.#wrote(parent, child);
        continue;
      }
      if (claimed && childUpToDate(stamped, cached, this.#deps.operator)) continue;
      const allowed = this.#mayWrite(
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
          const taken = await this.#create(resource, stamped, parentRef, signal);
          if (taken) {
            result.blocked.push(id);
            report(taken);
            continue;
          }
          verb = "Created";
          this.#wrote(parent, child);
        } else {
          const { replaced, changed } = await this.#update(kind, stamped, cached, signal);
          verb = replaced ? "Replaced" : adopting ? "Adopted" : "Updated";
          if (replaced) detail = `: ${replaced}, so it is deleted and created anew`;
          // A write the server found nothing to change in (our cache was behind) is no write.
          if (!changed) continue;
          this.#wrote(parent, child);
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
      log.info("{verb} {kind} {child}", {
        verb: verb.toLowerCase(),
        kind: resource.kind,
        child: name,
      });
      this.#deps.events.record(parent, {
        type: "Normal",
        reason: verb,
        message: `${verb} ${label}${detail}`,
      });
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
    const allowed = this.#mayWrite(
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
      this.#observe(this.#deps.for, written);
      if (written.metadata?.resourceVersion !== meta.resourceVersion) this.#wrote(parent);
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

  /**
   * Asks the write-loop guard about one write; true when it may go out, else the milliseconds
   * until it may be tried again. A loop is reported once, when it is found. Only a write that
   * succeeded and changed something is counted (`#wrote`): failed attempts (an API server
   * restarting, a CRD being deleted), conflicts and writes the server found nothing to change in
   * are no loop, however many there are.
   */
  #mayWrite(
    parent: KubeObject,
    child: ObjectRef | undefined,
    label: string,
    describe: () => string,
  ): true | number {
    const verdict = this.#deps.guard.check(
      this.#target(parent, child),
      parent.metadata?.generation,
    );
    if (verdict.allowed) return true;
    if (verdict.detected) {
      const kind = child?.kind ?? "status";
      this.#deps.metrics.writeLoops.inc({ controller: this.#deps.name, kind });
      this.#deps.events.record(parent, {
        type: "Warning",
        reason: "WriteLoopDetected",
        message: `${label} was written ${verdict.writes} times in a row without a change to ` +
          `the spec (${describe()}); not writing it for ${
            Math.round(verdict.retryInMs / 1000)
          } s. A plugin must return the same result for the same input, and no one else may ` +
          `keep changing what it writes`,
      });
    }
    return verdict.retryInMs;
  }

  /** Counts a write of `child` (or the status) of `parent` that succeeded and changed it. */
  #wrote(parent: KubeObject, child?: ObjectRef): void {
    this.#deps.guard.record(this.#target(parent, child), parent.metadata?.generation);
  }

  #target(parent: KubeObject, child: ObjectRef | undefined): WriteTarget {
    return { writer: this.#deps.name, parent: objectRef(this.#deps.for, parent), child };
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

  /** Our write's answer into the shared cache (see Informer.observe). */
  #observe(resource: Resource, object: KubeObject): void {
    for (const informer of this.#deps.pool.informers(resource)) informer.observe(object);
  }

  /**
   * Creates a child the cache does not show. When the name is taken: with labels of the runtime's
   * own (a ring's), by an object our caches may never show, so it is looked up: someone else's is
   * reported (returned); ours (its label edited) goes into the cache, to be applied at the next
   * look. Otherwise the cache will hear of it: look again then.
   */
  async #create(
    resource: Resource,
    stamped: KubeObject,
    parent: ObjectRef,
    signal: AbortSignal,
  ): Promise<Omit<ChildProblem, "plugin"> | undefined> {
    try {
      const created = await this.#deps.client.create(resource, stamped, {
        fieldManager: this.#manager,
        signal,
      });
      // A create the server answered as asked needs no second look (a webhook that changed it
      // does: then the parent is visited as for any change).
      if (childUpToDate(stamped, created, this.#deps.operator)) {
        this.#deps.created?.(parent, created);
      }
      this.#observe(resource, created);
      return undefined;
    } catch (error) {
      if (!isApiError(error, 409)) throw error;
      const { name, namespace } = stamped.metadata!;
      if (this.#deps.childLabels) {
        const live = await this.#deps.client.get(resource, name!, { namespace, signal }).catch(
          (error) => isApiError(error, 404) ? undefined : Promise.reject(error),
        );
        const problem = live && childProblem(this.#deps.name, resource, live, parent);
        if (problem) return problem;
        if (live) this.#observe(resource, live);
      }
      // Someone created this name after our cache last heard of it: look again once it knows.
      throw new TemporaryError(
        `${resource.kind} ${name} appeared meanwhile; looking at it again`,
        { retryAfterMs: 1_000, cause: error },
      );
    }
  }

  /**
   * Applies a child we control (or adopt), guarded by its uid. Says what forced a replacement, if
   * one was needed and the plugin allows it, and whether the object changed at all.
   */
  async #update(
    kind: OwnedKind,
    stamped: KubeObject,
    cached: KubeObject,
    signal: AbortSignal,
  ): Promise<{ replaced?: string; changed: boolean }> {
    const { resource } = kind;
    const uid = cached.metadata!.uid!;
    const before = await this.#takeOverCreateEntry(resource, cached, signal);
    try {
      const applied = await this.#deps.client.apply(resource, {
        ...stamped,
        metadata: { ...stamped.metadata, uid },
      }, { fieldManager: this.#manager, force: true, signal });
      this.#observe(resource, applied);
      return { changed: applied.metadata?.resourceVersion !== before };
    } catch (error) {
      const immutable = isApiError(error, 422) &&
        error.causes.find((c) => /field is immutable/.test(c.message ?? ""));
      if (!immutable || !kind.recreateOnImmutableChange) throw error;
      await this.#deps.client.delete(resource, cached.metadata!.name!, {
        namespace: cached.metadata!.namespace,
        propagationPolicy: "Background",
        uid,
        signal,
      });
      return { replaced: `${immutable.field ?? "a field"} cannot change in place`, changed: true };
    }
  }

  /** True when a field set of ours is among the child's managed fields (nobody cleared them). */
  #claimed(cached: KubeObject): boolean {
    return (cached.metadata?.managedFields ?? []).some((e) =>
      e.manager === this.#manager && !e.subresource
    );
  }

  /**
   * Takes out of a child what other field managers added (one JSON patch, guarded by the uid and
   * every value it removes), with a Warning Event. A patch the API server refuses as invalid
   * (the object cannot stand without the addition) deletes the child instead, to be made anew.
   */
  async #removeForeign(
    parent: KubeObject,
    kind: OwnedKind,
    cached: KubeObject,
    foreign: ForeignField[],
    signal: AbortSignal,
    log: Logger,
  ): Promise<void> {
    const { resource } = kind;
    const meta = cached.metadata!;
    const label = `${resource.kind} ${meta.name}`;
    const what = describeForeign(foreign);
    let detail = "";
    try {
      const patched = await this.#deps.client.request<KubeObject>(
        "PATCH",
        resourcePath(resource, {
          namespace: resource.namespaced ? meta.namespace : undefined,
          name: meta.name!,
        }),
        {
          signal,
          query: { fieldManager: this.#manager },
          contentType: "application/json-patch+json",
          body: removalPatch(cached, foreign),
        },
      );
      this.#observe(resource, { ...patched, apiVersion: cached.apiVersion, kind: cached.kind });
    } catch (error) {
      if (!isApiError(error, 422)) throw error;
      // A failed `test` has no causes: the child moved since the cache saw it; look again.
      if (!error.causes.length) {
        throw new TemporaryError(`${label} changed while its foreign fields were removed`, {
          retryAfterMs: 1_000,
          cause: error,
        });
      }
      await this.#deps.client.delete(resource, meta.name!, {
        namespace: meta.namespace,
        propagationPolicy: "Background",
        uid: meta.uid,
        signal,
      });
      detail = `; they could not be taken out (${error.causes[0].message ?? error.message}), ` +
        `so it is deleted and made anew`;
    }
    log.warn("removed from {kind} {child} what others added: {fields}", {
      kind: resource.kind,
      child: meta.name,
      fields: what,
    });
    this.#deps.events.record(parent, {
      type: "Warning",
      reason: "ForeignFieldsRemoved",
      message: `Removed from ${label} what other field managers added: ${what}${detail}. ` +
        `Its children are wholly the operator's: change the ${parent.kind} instead`,
    });
  }

  /**
   * Relabels our "Update" ownership entry (from creating the object) as "Apply", once. Returns the
   * resourceVersion the object has now, as far as we know.
   */
  async #takeOverCreateEntry(
    resource: Resource,
    cached: KubeObject,
    signal: AbortSignal,
  ): Promise<string | undefined> {
    const entries = cached.metadata?.managedFields ?? [];
    const index = entries.findIndex((e) =>
      e.manager === this.#manager && e.operation === "Update" && !e.subresource
    );
    if (index < 0) return cached.metadata?.resourceVersion;
    const hasApply = entries.some((e) => e.manager === this.#manager && e.operation === "Apply");
    const at = `/metadata/managedFields/${index}`;
    const migrated = await this.#deps.client.request<KubeObject>(
      "PATCH",
      resourcePath(resource, {
        namespace: resource.namespaced ? cached.metadata!.namespace : undefined,
        name: cached.metadata!.name!,
      }),
      {
        signal,
        query: { fieldManager: this.#manager },
        contentType: "application/json-patch+json",
        body: [
          { op: "test", path: "/metadata/uid", value: cached.metadata!.uid },
          { op: "test", path: `${at}/manager`, value: this.#manager },
          { op: "test", path: `${at}/operation`, value: "Update" },
          hasApply
            ? { op: "remove", path: at }
            : { op: "replace", path: `${at}/operation`, value: "Apply" },
        ],
      },
    );
    this.#observe(resource, { ...migrated, apiVersion: cached.apiVersion, kind: cached.kind });
    return migrated.metadata?.resourceVersion;
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
        const allowed = this.#mayWrite(
          parent,
          child,
          `${resource.kind} ${meta.name}`,
          () => "it is deleted and wanted again in turn",
        );
        if (allowed !== true) continue;
        try {
          await this.#deps.client.delete(resource, meta.name!, {
            namespace: meta.namespace,
            propagationPolicy: "Background",
            uid: meta.uid,
            signal,
          });
          this.#wrote(parent, child);
        } catch (error) {
          if (!isApiError(error, 404) && !isApiError(error, 409)) throw error;
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
