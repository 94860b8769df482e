/** The error that refuses a write decided from a cache that is behind the API server. */
import type { Informer } from "./informer.ts";

/** A write refused because a cache it was decided from is behind the API server (or fell behind since). */
export class StaleCacheError extends Error {
  /** Always `StaleCacheError`. */
  override readonly name = "StaleCacheError";
  /** The message names the informer's kind and namespace and why it is behind. */
  constructor(readonly informer: Informer) {
    super(
      `the cache of ${informer.resource.kind}${
        informer.namespace ? ` in ${informer.namespace}` : ""
      } is behind the API server (${
        informer.behind?.reason ?? "it fell behind and listed again"
      }); ` +
        `write refused until it has listed again`,
    );
  }
}
