/** The options of the client's verbs: what every request takes, and what lists, watches and writes add. */

/** Options every request takes. */
export interface RequestOptions {
  signal?: AbortSignal;
  /**
   * Milliseconds before the request is abandoned (it alone fails; the connection is judged by
   * whether anything arrives on it, see ConnectionHealth); default 30 s, `0` for none. For a
   * watch it bounds the wait for the response headers (default 15 s).
   */
  timeoutMs?: number;
}

export interface ListOptions extends RequestOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  resourceVersion?: string;
}

export interface WatchOptions extends ListOptions {
  /** Server-side timeout; the server ends the watch cleanly after it (default 5–10 min, jittered). */
  timeoutSeconds?: number;
  sendInitialEvents?: boolean;
}

export interface WriteOptions extends RequestOptions {
  namespace?: string;
  subresource?: string;
  dryRun?: boolean;
  fieldManager?: string;
  /**
   * What the server does with fields the schema does not know: `Strict` refuses the request
   * (what kubectl asks for), `Warn` (the server's default) drops them with a Warning header.
   */
  fieldValidation?: "Strict" | "Warn" | "Ignore";
}

export interface ApplyOptions extends WriteOptions {
  fieldManager: string;
  force?: boolean;
}

export interface DeleteOptions extends RequestOptions {
  namespace?: string;
  propagationPolicy?: "Foreground" | "Background" | "Orphan";
  gracePeriodSeconds?: number;
  /** Only delete when the object still has this resourceVersion. */
  resourceVersion?: string;
  /** Only delete when the object is still this one (not a namesake made since). */
  uid?: string;
}
