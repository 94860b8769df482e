/** What a plugin's admission hooks receive, may use and answer. */
import type { KubeClient } from "../../kube/client.ts";
import type { KubeObject } from "../../kube/object.ts";
import type { Resource } from "../../kube/resource.ts";
import type { CacheReader } from "../cache/mod.ts";
import type { Logger, Requester } from "../observe/mod.ts";
import type { Verb } from "./plugin.ts";

/** One admission request for the plugin's kind, as the API server sent it. */
export interface AdmissionRequest<T extends KubeObject = KubeObject> {
  /** What the request does. */
  operation: "CREATE" | "UPDATE" | "DELETE" | "CONNECT";
  /** The request's namespace. */
  namespace?: string;
  /** The object's name (absent for a create with `generateName`). */
  name?: string;
  /** The object as it would be stored (absent for DELETE). */
  object?: T;
  /** The object as stored (UPDATE, DELETE). */
  oldObject?: T;
  /** True when nothing will be stored: have no side effects. */
  dryRun: boolean;
  /** Who asks, as the review says (see `userInfo`). */
  username?: string;
  /**
   * Who asks, as the review says. The API server does not authenticate itself to webhooks by
   * default, so this is a claim: trust it no further than `requesterMay` does.
   */
  userInfo?: Requester;
}

/** What validation says: warnings kubectl prints, and a refusal for an object that can never work. */
export interface AdmissionVerdict {
  /** Printed by kubectl; say what will go wrong, and how to fix it. */
  warnings?: string[];
  /**
   * Refuses the request with this message: name the field and the fix. The runtime judges it as
   * a change: a create is refused; an update only when the old object, validated as a create,
   * is not refused with the same words (so an object stored before a rule stays writable); a
   * delete, an update of an object being deleted, and an update of metadata or status alone,
   * never (they become warnings).
   */
  denied?: string;
}

/**
 * What admission may use. It runs on every replica, leader or not, so it reads and never writes;
 * the cache may still be syncing right after a start. Whoever reaches the webhook port can post a
 * review, so an answer must not tell them what they could not read themselves: look at another
 * object only when `requesterMay` says the requester could, and prefer the cache.
 */
export interface AdmissionContext {
  /**
   * For reads the cache does not hold. Admission's own client, with its own rate limit (10 a
   * second, 20 at once), apart from the reconcilers': a flood of reviews slows admission alone.
   */
  client: KubeClient;
  /** Cached reads, as in a reconcile (the cache may still be syncing right after a start). */
  cache<R extends KubeObject, N extends boolean>(resource: Resource<R, N>): CacheReader<R, N>;
  /** True when the API server serves this kind (e.g. its CRD is installed). */
  installed(resource: Resource): boolean;
  /**
   * Whether the review's requester may `verb` objects of `resource` (the one named, in the
   * namespace given), by a SubjectAccessReview (cached; false without a requester, or when the
   * API server cannot be asked now).
   */
  requesterMay(
    verb: Verb,
    resource: Resource,
    object?: { namespace?: string; name?: string },
  ): Promise<boolean>;
  /** A logger for admission. */
  log: Logger;
}
