/**
 * Children that appear while their parent is being visited. A child the visit made itself, as it
 * wanted it, is no news to its parent (otherwise a cold start visits every parent twice in each
 * plugin that makes children); whether one that appears is, is known only once the create's answer
 * is in,
 * which the watch often beats: so the parent's next visit is decided when this one ends.
 */
export class VisitNews {
  /** By parent key, for the visits under way: versions seen appearing, and versions made. */
  readonly #visits = new Map<string, { appeared: string[]; made: string[] }>();

  /** A visit of `key` begins. */
  begin(key: string): void {
    this.#visits.set(key, { appeared: [], made: [] });
  }

  /** A child of `key` appeared: true when a visit is under way and will decide (else visit now). */
  appeared(key: string, version: string): boolean {
    const visit = this.#visits.get(key);
    visit?.appeared.push(version);
    return visit !== undefined;
  }

  /** The visit of `key` made a child at `version` itself. */
  made(key: string, version: string): void {
    this.#visits.get(key)?.made.push(version);
  }

  /** The visit of `key` ended: true when a child appeared that it did not make (visit again). */
  end(key: string): boolean {
    const visit = this.#visits.get(key);
    this.#visits.delete(key);
    return visit?.appeared.some((version) => !visit.made.includes(version)) ?? false;
  }
}

/** An object's identity at one version, as `VisitNews` compares them. */
export function versionOf(
  object: { metadata?: { uid?: string; resourceVersion?: string } },
): string {
  return `${object.metadata?.uid}@${object.metadata?.resourceVersion}`;
}
