/**
 * What went wrong with each parent's children at each plugin's last attempt, shared by the
 * plugins of one process: the plugin that writes a child is often not the one that reports on
 * the parent's status, and a refusal by the API server shows nowhere in the cache.
 */
import type { ChildProblem } from "../plugin/mod.ts";

export class ChildProblems {
  /** By parent (`Kind/namespace/name`), then by the plugin that had them. */
  readonly #problems = new Map<string, Map<string, ChildProblem[]>>();
  readonly #listeners = new Set<(parent: string, plugin: string) => void>();

  /** The problems of `parent`, from every plugin. */
  get(parent: string): ChildProblem[] {
    return [...this.#problems.get(parent)?.values() ?? []].flat();
  }

  /** Replaces what `plugin` found for `parent`; listeners hear of it only when it changed. */
  set(parent: string, plugin: string, problems: ChildProblem[]): void {
    const byPlugin = this.#problems.get(parent) ?? new Map<string, ChildProblem[]>();
    const before = JSON.stringify(byPlugin.get(plugin) ?? []);
    if (problems.length) byPlugin.set(plugin, problems);
    else byPlugin.delete(plugin);
    if (byPlugin.size) this.#problems.set(parent, byPlugin);
    else this.#problems.delete(parent);
    if (JSON.stringify(problems) === before) return;
    for (const listener of this.#listeners) listener(parent, plugin);
  }

  /** Forgets a parent that is gone. */
  forget(parent: string): void {
    this.#problems.delete(parent);
  }

  /** Calls `listener` with the parent (and the plugin that changed them) when problems change. */
  onChange(listener: (parent: string, plugin: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
