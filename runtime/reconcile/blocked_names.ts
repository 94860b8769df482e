/**
 * Names taken by objects we do not control, and the parents that want them: when such an object
 * changes or goes, the parents waiting for its name look again (rather than on a timer).
 */
export class BlockedNames {
  /** By the taken object's `refKey`: the parents (queue keys) that want its name. */
  readonly #waiting = new Map<string, Set<string>>();

  /** `parent` wants the name `id` holds. */
  wait(id: string, parent: string): void {
    const parents = this.#waiting.get(id) ?? new Set<string>();
    this.#waiting.set(id, parents.add(parent));
  }

  /** The object `id` changed or went: the parents that wanted its name, no longer waiting. */
  release(id: string): string[] {
    const parents = this.#waiting.get(id);
    if (!parents) return [];
    this.#waiting.delete(id);
    return [...parents];
  }

  /** `parent` is gone: it waits for nothing any more. */
  forget(parent: string): void {
    for (const [id, parents] of this.#waiting) {
      if (parents.delete(parent) && !parents.size) this.#waiting.delete(id);
    }
  }

  /** How many names are waited for. */
  get size(): number {
    return this.#waiting.size;
  }
}
