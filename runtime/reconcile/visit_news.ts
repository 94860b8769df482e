/**
 * What a plugin's own writes tell its parents: nothing. A child the visit made itself, as it
 * wanted it, is no news to its parent (otherwise a cold start visits every parent twice in each
 * plugin that makes children); whether one that appears is, is known only once the create's answer
 * is in, which the watch often beats: so the parent's next visit is decided when this one ends.
 * The watch's echo of a write that comes after its visit ended is no news either (a takeover
 * writes thousands of children, and their echoes would queue every parent again, in the lane for
 * edits, ahead of the edits people make meanwhile). Nor is the echo of a parent's status the
 * plugin wrote (the visit that wrote it decided, and one that writes nothing would follow it): a
 * change of the parent's status alone during its visit is held, as a child's is, and visits again
 * for its own causes only when the visit did not write it.
 */
import { type Cause, cause } from "./cause.ts";

export class VisitNews {
  /**
   * By parent key, for the visits under way: children's versions seen appearing, the parent's
   * status changes held with their causes, and the versions the visit made.
   */
  readonly #visits = new Map<
    string,
    { appeared: string[]; held: { version: string; because: Cause }[]; made: string[] }
  >();
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
    this.#visits.set(key, { appeared: [], held: [], made: [] });
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

  /**
   * The parent `key` itself changed to `version`, its status alone: true when a visit of it is
   * under way and holds `because` until it ends (else visit now).
   */
  held(key: string, version: string, because: Cause): boolean {
    const visit = this.#visits.get(key);
    visit?.held.push({ version, because });
    return visit !== undefined;
  }

  /** The visit of `key` made or applied a child (or its status) at `version`, as it wanted it. */
  made(key: string, version: string): void {
    this.#visits.get(key)?.made.push(version);
    this.wrote(version);
  }

  /** A write of ours left a child (or a parent's status) at `version`, as the plugin wanted it. */
  wrote(version: string): void {
    this.#echoes.add(version);
    if (this.#echoes.size > this.#maxEchoes) {
      this.#echoes.delete(this.#echoes.values().next().value!);
    }
  }

  /** An object changed to `version`: true (once) when that is the echo of a write of ours. */
  echo(version: string): boolean {
    return this.#echoes.delete(version);
  }

  /**
   * The visit of `key` ended: the causes to visit it again for, none when nothing changed
   * meanwhile other than as it wrote it.
   */
  end(key: string): Cause[] {
    const visit = this.#visits.get(key);
    this.#visits.delete(key);
    if (!visit) return [];
    const news = (version: string) => !visit.made.includes(version);
    // Echoes the watch brought before the answers: they will not come again.
    for (const version of visit.appeared) this.#echoes.delete(version);
    for (const { version } of visit.held) this.#echoes.delete(version);
    const again = visit.held.filter(({ version }) => news(version)).map((h) => h.because);
    if (visit.appeared.some(news)) again.unshift(cause("child", { change: "meanwhile" }));
    return again;
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
