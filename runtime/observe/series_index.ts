/**
 * The series of one metric family, found by their label values one label at a time: no key is
 * made for an update, so counting an event builds and hashes no new string, and allocates nothing
 * once its series exists.
 */

/** Label values by label name (a missing label is the empty value). */
type LabelValues = Readonly<Record<string, string>>;

/** A tree of Maps, one level per label name, with the series at its leaves. */
type Level = Map<string, unknown>;

/** The series of a family with the label names `names` (see the module doc). */
export class SeriesIndex<S> {
  readonly #names: readonly string[];
  readonly #root: Level = new Map();
  /** Every series, in the order they were made (the order they are rendered in). */
  readonly #all = new Set<S>();

  constructor(names: readonly string[]) {
    this.#names = names;
  }

  /** The series of `labels`, if it was made. */
  get(labels: LabelValues): S | undefined {
    const level = this.#level(labels, false);
    return level?.get(this.#leafKey(labels)) as S | undefined;
  }

  /** Makes `series` the series of `labels`. */
  set(labels: LabelValues, series: S): void {
    const level = this.#level(labels, true)!;
    const key = this.#leafKey(labels);
    const old = level.get(key) as S | undefined;
    if (old !== undefined) this.#all.delete(old);
    level.set(key, series);
    this.#all.add(series);
  }

  /** Forgets the series of `labels`, and the levels it leaves empty. */
  delete(labels: LabelValues): void {
    const path: [Level, string][] = [];
    let level = this.#root;
    for (let i = 0; i < this.#names.length - 1; i++) {
      const key = labels[this.#names[i]] ?? "";
      const next = level.get(key) as Level | undefined;
      if (next === undefined) return;
      path.push([level, key]);
      level = next;
    }
    const key = this.#leafKey(labels);
    const series = level.get(key) as S | undefined;
    if (series === undefined) return;
    level.delete(key);
    this.#all.delete(series);
    for (let i = path.length - 1; i >= 0 && level.size === 0; i--) {
      const [parent, parentKey] = path[i];
      parent.delete(parentKey);
      level = parent;
    }
  }

  /** How many levels (Maps) the index holds, the root's included: what pruning keeps small. */
  get levels(): number {
    const count = (level: Level, depth: number): number =>
      depth === 0 ? 1 : [...level.values()].reduce<number>(
        (sum, next) => sum + count(next as Level, depth - 1),
        1,
      );
    return count(this.#root, Math.max(0, this.#names.length - 1));
  }

  /** Every series, in the order they were made. */
  values(): IterableIterator<S> {
    return this.#all.values();
  }

  /** The level holding the series of `labels` (made on the way when `make`). */
  #level(labels: LabelValues, make: boolean): Level | undefined {
    let level = this.#root;
    for (let i = 0; i < this.#names.length - 1; i++) {
      const key = labels[this.#names[i]] ?? "";
      let next = level.get(key) as Level | undefined;
      if (next === undefined) {
        if (!make) return undefined;
        next = new Map();
        level.set(key, next);
      }
      level = next;
    }
    return level;
  }

  /** The key of the series at its level: its last label's value ("" with no labels). */
  #leafKey(labels: LabelValues): string {
    const names = this.#names;
    return names.length ? labels[names[names.length - 1]] ?? "" : "";
  }
}
