/**
 * The versions of objects whose finalizer we removed: until the cache has caught up with that
 * write, the object it still shows (woken, say, by a change the finalize made itself) is one we
 * have finalized already, and finalizing it again would repeat the cleanup.
 */

/** An object's identity at one version. */
export interface Version {
  uid?: string;
  resourceVersion?: string;
}

export class FinalizedVersions {
  readonly #done = new Map<string, Version>();

  /** `key`'s object was finalized at `version`. */
  remember(key: string, version: Version): void {
    this.#done.set(key, { uid: version.uid, resourceVersion: version.resourceVersion });
  }

  /** True when `key`'s object at `version` is one we finalized already. */
  finalized(key: string, version: Version): boolean {
    const done = this.#done.get(key);
    return done !== undefined && done.uid === version.uid &&
      done.resourceVersion === version.resourceVersion;
  }

  /** The object left the cache: nothing more to remember of it. */
  forget(key: string): void {
    this.#done.delete(key);
  }
}
