/**
 * Writes one child of a parent, the careful ways the applier needs (see applier.ts for why a
 * child is never taken from someone else): creates it by a create-only apply (a name taken
 * meanwhile is looked up, not overwritten), applies it guarded by its uid (replacing it when an
 * immutable field must change and the plugin allows), takes out what other field managers added,
 * deletes it by uid. Each answer goes into the shared cache at once, except in a dry run, whose
 * answers were not stored.
 */
import type { KubeClient } from "../../kube/client.ts";
import { isApiError } from "../../kube/errors.ts";
import type { KubeObject } from "../../kube/object.ts";
import type { ObjectRef } from "../../kube/object_ref.ts";
import { type Resource, resourcePath } from "../../kube/resource.ts";
import type { PoolReader } from "../cache/mod.ts";
import type { OperatorIdentity } from "../identity/mod.ts";
import type { EventRecorder, Logger } from "../observe/mod.ts";
import { type ChildProblem, type OwnedKind, TemporaryError } from "../plugin/mod.ts";
import { childUpToDate } from "./desired_state.ts";
import { describeForeign, type ForeignField, removalPatch } from "./foreign_fields.ts";
import { childProblem } from "./ownership.ts";

/** What a child writer writes with. */
export interface ChildWriterDeps {
  /** The plugin's name, for the problems it reports. */
  name: string;
  /** The plugin's field manager. */
  manager: string;
  operator: OperatorIdentity;
  client: KubeClient;
  pool: PoolReader;
  events: EventRecorder;
  /** See ApplierDeps.childLabels: with them, a name taken meanwhile is looked up. */
  childLabels?: (parent: KubeObject) => Record<string, string>;
  /** See ApplierDeps.created. */
  created?: (parent: ObjectRef, child: KubeObject) => void;
  /** See ApplierDeps.applied. */
  applied?: (child: KubeObject) => void;
  /** Writes are server-side dry runs: their answers are not put into the cache. */
  dryRun?: boolean;
}

export class ChildWriter {
  readonly #deps: ChildWriterDeps;

  constructor(deps: ChildWriterDeps) {
    this.#deps = deps;
  }

  /**
   * Creates a child the cache does not show. When the name is taken: with labels of the runtime's
   * own (a ring's), by an object our caches may never show, so it is looked up: someone else's is
   * reported (returned); ours (its label edited) goes into the cache, to be applied at the next
   * look. Otherwise the cache will hear of it: look again then.
   */
  async create(
    resource: Resource,
    stamped: KubeObject,
    parent: ObjectRef,
    signal: AbortSignal,
  ): Promise<Omit<ChildProblem, "plugin"> | undefined> {
    try {
      const created = await this.#deps.client.apply(resource, stamped, {
        fieldManager: this.#deps.manager,
        createOnly: true,
        signal,
      });
      // A create the server answered as asked needs no second look (a webhook that changed it
      // does: then the parent is visited as for any change).
      if (!this.#deps.dryRun && childUpToDate(stamped, created, this.#deps.operator)) {
        this.#deps.created?.(parent, created);
      }
      this.observe(resource, created);
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
        if (live) this.observe(resource, live);
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
   * one was needed and the plugin allows it, and whether the object changed at all. `lookAgain`:
   * the answer needs another visit even when it is as wanted (a child we had no field entry in:
   * only the answer says which of its fields are someone else's).
   */
  async update(
    kind: OwnedKind,
    stamped: KubeObject,
    cached: KubeObject,
    signal: AbortSignal,
    lookAgain = false,
  ): Promise<{ replaced?: string; changed: boolean }> {
    const { resource } = kind;
    const uid = cached.metadata!.uid!;
    const before = await this.#takeOverCreateEntry(resource, cached, signal);
    try {
      const applied = await this.#deps.client.apply(resource, {
        ...stamped,
        metadata: { ...stamped.metadata, uid },
      }, { fieldManager: this.#deps.manager, force: true, signal });
      if (
        !this.#deps.dryRun && !lookAgain && childUpToDate(stamped, applied, this.#deps.operator)
      ) {
        this.#deps.applied?.(applied);
      }
      this.observe(resource, applied);
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

  /**
   * Takes out of a child what other field managers added (one JSON patch, guarded by the uid and
   * every value it removes), with a Warning Event. A patch the API server refuses as invalid
   * (the object cannot stand without the addition) deletes the child instead, to be made anew.
   */
  async removeForeign(
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
          query: { fieldManager: this.#deps.manager },
          contentType: "application/json-patch+json",
          body: removalPatch(cached, foreign),
        },
      );
      this.observe(resource, { ...patched, apiVersion: cached.apiVersion, kind: cached.kind });
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
    // A dry run's patch stored nothing: the applier tells its report instead.
    if (this.#deps.dryRun) return;
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
   * Relabels our "Update" ownership entry (from creating the object with `POST`, as 0.2 did) as
   * "Apply", once. Returns the resourceVersion the object has now, as far as we know.
   */
  async #takeOverCreateEntry(
    resource: Resource,
    cached: KubeObject,
    signal: AbortSignal,
  ): Promise<string | undefined> {
    const entries = cached.metadata?.managedFields ?? [];
    const index = entries.findIndex((e) =>
      e.manager === this.#deps.manager && e.operation === "Update" && !e.subresource
    );
    if (index < 0) return cached.metadata?.resourceVersion;
    const hasApply = entries.some((e) =>
      e.manager === this.#deps.manager && e.operation === "Apply"
    );
    const at = `/metadata/managedFields/${index}`;
    const migrated = await this.#deps.client.request<KubeObject>(
      "PATCH",
      resourcePath(resource, {
        namespace: resource.namespaced ? cached.metadata!.namespace : undefined,
        name: cached.metadata!.name!,
      }),
      {
        signal,
        query: { fieldManager: this.#deps.manager },
        contentType: "application/json-patch+json",
        body: [
          { op: "test", path: "/metadata/uid", value: cached.metadata!.uid },
          { op: "test", path: `${at}/manager`, value: this.#deps.manager },
          { op: "test", path: `${at}/operation`, value: "Update" },
          hasApply
            ? { op: "remove", path: at }
            : { op: "replace", path: `${at}/operation`, value: "Apply" },
        ],
      },
    );
    // A step of the visit's own write, which the apply after it completes: its echo is no news.
    if (!this.#deps.dryRun) this.#deps.applied?.(migrated);
    this.observe(resource, { ...migrated, apiVersion: cached.apiVersion, kind: cached.kind });
    return migrated.metadata?.resourceVersion;
  }

  /** Deletes a child by its uid (in the background); one already gone or replaced is no error. */
  async delete(resource: Resource, child: KubeObject, signal: AbortSignal): Promise<void> {
    const meta = child.metadata!;
    try {
      await this.#deps.client.delete(resource, meta.name!, {
        namespace: meta.namespace,
        propagationPolicy: "Background",
        uid: meta.uid,
        signal,
      });
    } catch (error) {
      if (!isApiError(error, 404) && !isApiError(error, 409)) throw error;
    }
  }

  /** Takes an answer to our write into the caches at once (not in a dry run: nothing was stored). */
  observe(resource: Resource, object: KubeObject): void {
    if (this.#deps.dryRun) return;
    for (const informer of this.#deps.pool.informers(resource)) informer.observe(object);
  }
}
