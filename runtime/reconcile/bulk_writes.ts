/**
 * Which changes the process's own bulk work made (a start's, a resync's, a shard's visits): such a
 * change is bulk work too, for every plugin that hears of it. Otherwise a takeover that writes ten
 * thousand Modules puts ten thousand status visits in the edit lane, ahead of the status of the
 * object a person just made. A change is bulk-made when a bulk visit's write (a child, or its
 * parent's status) left that version, or when it is of a parent under a bulk visit now or of a child
 * whose controller is: the watch often brings a write's echo before the write's answer names its
 * version.
 */
import type { KubeObject } from "../../kube/object.ts";
import { ownerRefOf, refKey } from "../../kube/object_ref.ts";
import { versionOf } from "./visit_news.ts";

/** What bulk visits of one process wrote and are writing (see the module doc). */
export class BulkWrites {
  /** Versions (`versionOf`) bulk visits wrote, oldest first. */
  readonly #versions = new Set<string>();
  /** Keys (`refKey`) under a bulk visit now, with how many plugins visit each. */
  readonly #visiting = new Map<string, number>();
  readonly #max: number;

  /**
   * `max` bounds the versions remembered: one past it, whose change no one has heard of yet, is
   * then heard of as an edit (the lane of a change nothing is known of).
   */
  constructor(options: { max?: number } = {}) {
    this.#max = options.max ?? 16_384;
  }

  /** A bulk visit of `key` begins; call the function returned when it ends. */
  visit(key: string): () => void {
    this.#visiting.set(key, (this.#visiting.get(key) ?? 0) + 1);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      const left = this.#visiting.get(key)! - 1;
      if (left > 0) this.#visiting.set(key, left);
      else this.#visiting.delete(key);
    };
  }

  /** A bulk visit wrote an object, leaving it at `version`. */
  wrote(version: string): void {
    this.#versions.add(version);
    if (this.#versions.size > this.#max) {
      this.#versions.delete(this.#versions.values().next().value!);
    }
  }

  /**
   * Whether bulk work made `object` what it is now (every plugin may ask; asking forgets nothing).
   * `key`, the object's own key when it is a parent: a bulk visit of it writes its status.
   */
  made(object: KubeObject, key?: string): boolean {
    if (this.#versions.has(versionOf(object))) return true;
    if (this.#visiting.size === 0) return false;
    if (key !== undefined && this.#visiting.has(key)) return true;
    const namespace = object.metadata?.namespace;
    return (object.metadata?.ownerReferences ?? []).some((owner) => {
      if (!owner.controller) return false;
      // The owner's scope is not known here: a namespaced child may have a cluster-scoped owner.
      return this.#visiting.has(refKey(ownerRefOf(owner, namespace))) ||
        (namespace !== undefined && this.#visiting.has(refKey(ownerRefOf(owner))));
    });
  }
}
