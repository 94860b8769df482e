/**
 * What a plugin's own writes tell its parents: nothing. A child the visit made itself, as it
 * wanted it, is no news to its parent (otherwise a cold start visits every parent twice in each
 * plugin that makes children); whether one that appears is, is known only once the create's answer
 * is in, which the watch often beats: so the parent's next visit is decided when this one ends.
 * The watch's echo of a write that comes after its visit ended is no news either (a takeover
 * writes thousands of children, and their echoes would queue every parent again, in the lane for
 * edits, ahead of the edits people make meanwhile).
 */
export class VisitNews {
  /** By parent key, for the visits under way: versions seen appearing, and versions made. */
  readonly #visits = new Map<string, { appeared: string[]; made: string[] }>();
  /** Versions our writes' answers named whose watch event has not come yet, oldest first. */
  readonly #echoes = new Set<string>();
  readonly #maxEchoes: number;

  /**
   * `maxEchoes` bounds the versions awaiting their echo (one whose echo never comes, since a relist
   * skipped it, is forgotten past the bound); enough for the writes of a few seconds at the
   * client's rate limit.
   */
  constructor(options: { maxEchoes?: number } = {}) {
    this.#maxEchoes = options.maxEchoes ?? 8192;
  }

  /** A visit of `key` begins. */
  begin(key: string): void {
    this.#visits.set(key, { appeared: [], made: [] });
  }

  /**
   * A child of `key` appeared or changed to `version`: true when a visit is under way and will
   * decide (else visit now).
   */
  appeared(key: string, version: string): boolean {
    const visit = this.#visits.get(key);
    visit?.appeared.push(version);
    return visit !== undefined;
  }

  /** The visit of `key` made or applied a child at `version` itself, as it wanted it. */
  made(key: string, version: string): void {
    this.#visits.get(key)?.made.push(version);
    this.wrote(version);
  }

  /** A write of ours left a child at `version`, as the plugin wanted it. */
  wrote(version: string): void {
    this.#echoes.add(version);
    if (this.#echoes.size > this.#maxEchoes) {
      this.#echoes.delete(this.#echoes.values().next().value!);
    }
  }

  /** A child changed to `version`: true (once) when that is the echo of a write of ours. */
  echo(version: string): boolean {
    return this.#echoes.delete(version);
  }

  /** The visit of `key` ended: true when a child appeared that it did not make (visit again). */
  end(key: string): boolean {
    const visit = this.#visits.get(key);
    this.#visits.delete(key);
    // Echoes the watch brought before the answers: they will not come again.
    for (const version of visit?.appeared ?? []) this.#echoes.delete(version);
    return visit?.appeared.some((version) => !visit.made.includes(version)) ?? false;
  }

  /** How many versions await their echo. */
  get awaitingEchoes(): number {
    return this.#echoes.size;
  }
}

/** An object's identity at one version, as `VisitNews` compares them. */
export function versionOf(
  object: { metadata?: { uid?: string; resourceVersion?: string } },
): string {
  return `${object.metadata?.uid}@${object.metadata?.resourceVersion}`;
}
