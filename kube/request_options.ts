/** The options of the client's verbs: what every request takes, and what lists, watches and writes add. */

/** Options every request takes. */
export interface RequestOptions {
  /** Abandons the request (and its retries) when it aborts. */
  signal?: AbortSignal;
  /**
   * Milliseconds before the request is abandoned (it alone fails; the connection is judged by
   * whether anything arrives on it, see ConnectionHealth); default 30 s, `0` for none. For a
   * watch it bounds the wait for the response headers (default 15 s).
   */
  timeoutMs?: number;
}

/** What a list asks for: where, which objects, and which page. */
export interface ListOptions extends RequestOptions {
  /** The namespace (for a list: none means every namespace; else the client's default). */
  namespace?: string;
  /** Only objects with these labels, e.g. `app=web,tier!=db`. */
  labelSelector?: string;
  /** Only objects with these fields, e.g. `metadata.name=x`. */
  fieldSelector?: string;
  /** At most this many objects per page. */
  limit?: number;
  /** The token of the next page (the previous page's `metadata.continue`). */
  continue?: string;
  /** From which version of the collection (watch from a list's). */
  resourceVersion?: string;
  /**
   * Only objects in these shards (KEP-5866, `shard_range.ts` builds it). Where the API server does
   * not honour it (the `ShardedListAndWatch` gate off) it is ignored without a word, and with its
   * watch cache off a 1.36 server filters lists but not watches: filter what arrives as well.
   */
  shardSelector?: string;
  /**
   * Objects as metadata alone (`PartialObjectMetadata`, each with kind `PartialObjectMetadata`:
   * put the real one back). Their `managedFields` still come whole.
   */
  metadataOnly?: boolean;
}

/** What a watch asks for: a list's options, how long, and whether to start with a list. */
export interface WatchOptions extends ListOptions {
  /** Server-side timeout; the server ends the watch cleanly after it (default 5–10 min, jittered). */
  timeoutSeconds?: number;
  /** Start with the current objects as ADDED events (watch-list). */
  sendInitialEvents?: boolean;
}

/** What a write may add: where, a subresource, a dry run, who writes, how strictly. */
export interface WriteOptions extends RequestOptions {
  /** The namespace (for a list: none means every namespace; else the client's default). */
  namespace?: string;
  /** e.g. `status`, `scale`. */
  subresource?: string;
  /** Validate and answer, but store nothing. */
  dryRun?: boolean;
  /** Who writes: recorded in `metadata.managedFields`. */
  fieldManager?: string;
  /**
   * What the server does with fields the schema does not know: `Strict` refuses the request
   * (what kubectl asks for), `Warn` (the server's default) drops them with a Warning header.
   */
  fieldValidation?: "Strict" | "Warn" | "Ignore";
}

/** Server-side apply: who owns the fields, and whether to take them from others. */
export interface ApplyOptions extends WriteOptions {
  /** Who owns the applied fields (required for apply). */
  fieldManager: string;
  /** Take fields another manager owns instead of failing with 409. */
  force?: boolean;
  /**
   * Only create: an object of that name already stored is left as it is (409 Conflict). Unlike a
   * `POST`, whose fields the server records under an "Update" entry that no later apply can take
   * a field out of, the created fields are owned as applied, so the next apply that drops one
   * removes it.
   */
  createOnly?: boolean;
}

/** A delete's namespace, propagation, grace period and preconditions. */
export interface DeleteOptions extends RequestOptions {
  /** The namespace (for a list: none means every namespace; else the client's default). */
  namespace?: string;
  /** What happens to dependents: deleted first, after, or left. */
  propagationPolicy?: "Foreground" | "Background" | "Orphan";
  /** How long a pod may take to stop. */
  gracePeriodSeconds?: number;
  /** Only delete when the object still has this resourceVersion. */
  resourceVersion?: string;
  /** Only delete when the object is still this one (not a namesake made since). */
  uid?: string;
}
