/**
 * What went wrong with each parent's children at each plugin's last attempt, shared by the
 * plugins of one process: the plugin that writes a child is often not the one that reports on
 * the parent's status, and a refusal by the API server shows nowhere in the cache.
 */
import { type ObjectRef, refKey } from "../../kube/object_ref.ts";
import type { ChildProblem } from "../plugin/mod.ts";

/**
 * What each plugin could not write of each parent's children (see the module doc), and who wants to
 * hear when that changes.
 */
export class ChildProblems {
  /** By parent (`refKey`), then by the plugin that had them. */
  readonly #problems = new Map<string, Map<string, ChildProblem[]>>();
  readonly #listeners = new Set<(parent: ObjectRef, plugin: string) => void>();

  /** The problems of `parent`, from every plugin. */
  get(parent: ObjectRef): ChildProblem[] {
    return [...this.#problems.get(refKey(parent))?.values() ?? []].flat();
  }

  /** Replaces what `plugin` found for `parent`; listeners hear of it only when it changed. */
  set(parent: ObjectRef, plugin: string, problems: ChildProblem[]): void {
    const key = refKey(parent);
    const byPlugin = this.#problems.get(key) ?? new Map<string, ChildProblem[]>();
    const before = JSON.stringify(byPlugin.get(plugin) ?? []);
    if (problems.length) byPlugin.set(plugin, problems);
    else byPlugin.delete(plugin);
    if (byPlugin.size) this.#problems.set(key, byPlugin);
    else this.#problems.delete(key);
    if (JSON.stringify(problems) === before) return;
    for (const listener of this.#listeners) listener(parent, plugin);
  }

  /** Forgets a parent that is gone. */
  forget(parent: ObjectRef): void {
    this.#problems.delete(refKey(parent));
  }

  /** Calls `listener` with the parent (and the plugin that changed them) when problems change. */
  onChange(listener: (parent: ObjectRef, plugin: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
