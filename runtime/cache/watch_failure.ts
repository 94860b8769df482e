/**
 * What a failed list or watch of a kind means for its cache: give up (a kind the plugins need and
 * may not read), list to learn whether the kind is gone, hold it as missing, relist at once, or
 * retry after a backoff; and, for the verdicts that leave the cache behind, why in words.
 */
import { isApiError } from "../../kube/errors.ts";
import { NetworkError } from "../../kube/network_error.ts";
import { missingRule } from "../../kube/preflight.ts";
import type { Resource } from "../../kube/resource.ts";
import { StartupError } from "../../util/startup_error.ts";

/** Where a failure happened: what the informer was doing, and what it knows of its kind. */
export interface FailureContext {
  /** True when the failure was a list's (or a relist was due), false when a watch's. */
  listing: boolean;
  /** Whether a first list is in the cache already. */
  synced: boolean;
  /** Whether the plugins can do without the kind (a 403 then turns off what reads it). */
  optional?: boolean;
  /** The kind cached. */
  resource: Pick<Resource, "group" | "plural">;
  /** The namespace watched; undefined for all. */
  namespace?: string;
}

/**
 * What the informer does next. `behind` is why its cache fell behind; `give up` and `missing`
 * leave the cache as it is (failed, or rightly empty), `warning` is what to log when a kind goes
 * missing.
 */
export type FailureVerdict =
  | { next: "give up"; error: StartupError }
  | { next: "missing"; absence: "not served" | "not allowed"; warning: string }
  | { next: "look"; behind: string }
  | { next: "relist"; why: "expired" | "replaced"; behind: string }
  | { next: "retry"; network: boolean; behind: string };

/** What to log when an optional kind may not be read (with its `kind`, `plural` and `seconds`). */
const NOT_ALLOWED = "not allowed to list {kind} (403), which is optional: what it is read for is " +
  "off; grant list and watch on {plural} to turn it on. Looking again every {seconds} s";

/** What to log when a kind is not served (with its `kind` and the `seconds` between looks). */
const NOT_SERVED = "{kind} is not served by the API server (is its CRD installed?); looking " +
  "again every {seconds} s";

/** What `error`, thrown by a list or a watch (see FailureContext), means for the cache. */
export function judgeFailure(error: unknown, at: FailureContext): FailureVerdict {
  const message = error instanceof Error ? error.message : String(error);
  if (isApiError(error, 403) && at.listing && !at.synced && !at.optional) {
    // Not allowed to read a kind the plugins need: nothing can work, so say what to grant.
    const { group, plural } = at.resource;
    const rule = missingRule(group, plural, ["list", "watch"], at.namespace);
    return { next: "give up", error: new StartupError(`${error.message}; ${rule}`) };
  }
  const behind = `${at.listing ? "listing" : "its watch"} failed: ${message}`;
  const forbidden = isApiError(error, 403);
  if (isApiError(error, 404) || (forbidden && at.optional)) {
    // A watch refused so: the kind itself may be gone (its CRD deleted). A list says.
    if (!at.listing) return { next: "look", behind };
    return forbidden
      ? { next: "missing", absence: "not allowed", warning: NOT_ALLOWED }
      : { next: "missing", absence: "not served", warning: NOT_SERVED };
  }
  if (isApiError(error, 410)) return { next: "relist", why: "expired", behind };
  if (error instanceof NetworkError && error.failure === "replaced") {
    // We replaced the connection (the transport said why): list again at once on the new one. A
    // reset by the peer or the path is a failure like any other, with its backoff.
    return { next: "relist", why: "replaced", behind };
  }
  return { next: "retry", network: error instanceof NetworkError, behind };
}
