/**
 * Asks the API server who a bearer token belongs to (TokenReview) and whether someone may do
 * something (SubjectAccessReview), the way controller-runtime's metrics filter and kube-rbac-proxy
 * do: answers are cached for a while (a minute for who, five minutes for yes and thirty seconds
 * for no, as controller-runtime), in caches of bounded size, the same question asked at once goes
 * out once, and what goes out fits a budget of its own, apart from the reconcilers' rate limit. A
 * question the budget cannot pay for, or that the API server does not answer, is "unavailable":
 * callers answer 503 or skip what needed it, and never wait in a queue a flood could grow.
 */
import type { KubeClient } from "../../kube/client.ts";
import type { KubeObject } from "../../kube/object.ts";
import type { Resource } from "../../kube/resource.ts";
import type { Logger } from "./logging.ts";
import { type RateLimit, RateLimiter } from "../../kube/rate_limiter.ts";
import { WarningThrottle } from "./warning_throttle.ts";

/** Who a request comes from, as the API server knows them. */
export interface Requester {
  /** The user's name, e.g. `system:serviceaccount:monitoring:prometheus`. */
  username: string;
  /** The user's uid. */
  uid?: string;
  /** The groups the user is in. */
  groups?: string[];
  /** What else the authenticator said. */
  extra?: Record<string, string[]>;
}

/** What is asked: a verb on a path (`/metrics`), or on objects of a kind. */
export type AccessAttributes =
  | { nonResourceAttributes: { path: string; verb: string } }
  | {
    resourceAttributes: {
      verb: string;
      group: string;
      resource: string;
      namespace?: string;
      name?: string;
      subresource?: string;
    };
  };

/** The API server could not be asked now: the budget is spent, or it did not answer. */
export const UNAVAILABLE = "unavailable";
/** The answer when the API server could not be asked: the caller answers 503 or does without. */
export type Unavailable = typeof UNAVAILABLE;

/** `authentication.k8s.io/v1` TokenReview: who a bearer token belongs to. */
export const TOKEN_REVIEW: Resource<KubeObject> = {
  group: "authentication.k8s.io",
  version: "v1",
  kind: "TokenReview",
  plural: "tokenreviews",
  namespaced: false,
};

/** `authorization.k8s.io/v1` SubjectAccessReview: whether someone may do something. */
export const SUBJECT_ACCESS_REVIEW: Resource<KubeObject> = {
  group: "authorization.k8s.io",
  version: "v1",
  kind: "SubjectAccessReview",
  plural: "subjectaccessreviews",
  namespaced: false,
};

/** How an AccessReviewer asks: its budget, its caches and how long it waits for an answer. */
export interface AccessReviewerOptions {
  /**
   * TokenReviews and SubjectAccessReviews sent, at most: 20 at once and 10 a second after that
   * by default; a question beyond it is not asked (and never waits in a line).
   */
  budget?: RateLimit;
  /** Answers kept per cache (oldest forgotten first); default 1024. */
  cacheSize?: number;
  /**
   * How long answers are believed, in milliseconds: who a token is (`authenticated`, 1 min), that
   * it is no one (`unauthenticated`, 10 s), a yes (`allowed`, 5 min), a no (`denied`, 30 s).
   */
  ttlMs?: { authenticated?: number; unauthenticated?: number; allowed?: number; denied?: number };
  /** Deadline of each question to the API server; default 5 s. */
  timeoutMs?: number;
  /** Where the budget's and the failures' warnings go (throttled). */
  log: Logger;
}

/**
 * The largest question `authorize` sends (the requester and what is asked, as JSON): a real
 * user's groups and extras fit many times over, and a caller's invented requester cannot make
 * each review it posts cost the API server megabytes.
 */
export const MAX_QUESTION_BYTES = 64 * 1024;

const DEFAULT_TTL_MS = {
  authenticated: 60_000,
  unauthenticated: 10_000,
  allowed: 300_000,
  denied: 30_000,
};

/**
 * Asks the API server who a caller is and what they may do, with cached answers and a budget of its
 * own (see the module doc); `/metrics` and admission use it.
 */
export class AccessReviewer {
  /** The budget every question sent is paid from. */
  readonly budget: RateLimiter;
  readonly #client: KubeClient;
  readonly #ttl: typeof DEFAULT_TTL_MS;
  readonly #timeoutMs: number;
  readonly #tokens: TtlCache<Requester | null>;
  readonly #decisions: TtlCache<boolean>;
  readonly #asking = new Map<string, Promise<unknown>>();
  readonly #warnings: WarningThrottle;

  /** A reviewer that asks through `client`, its caches empty. */
  constructor(client: KubeClient, options: AccessReviewerOptions) {
    this.#client = client;
    this.budget = new RateLimiter(options.budget ?? { qps: 10, burst: 20 });
    this.#ttl = { ...DEFAULT_TTL_MS, ...options.ttlMs };
    this.#timeoutMs = options.timeoutMs ?? 5_000;
    this.#tokens = new TtlCache(options.cacheSize ?? 1024);
    this.#decisions = new TtlCache(options.cacheSize ?? 1024);
    this.#warnings = new WarningThrottle(options.log);
  }

  /** Who `token` belongs to; undefined when the API server does not take it. */
  async authenticate(token: string): Promise<Requester | undefined | Unavailable> {
    // The cache holds a digest, never the token.
    const key = await digest(new TextEncoder().encode(token));
    const known = this.#tokens.get(key);
    if (known !== undefined) return known ?? undefined;
    const answer = await this.#once(`token ${key}`, async () => {
      const review = await this.#ask(TOKEN_REVIEW, { spec: { token } }) as {
        status?: { authenticated?: boolean; user?: Requester };
      } | Unavailable;
      if (review === UNAVAILABLE) return UNAVAILABLE;
      const user = review.status?.authenticated && review.status.user?.username
        ? review.status.user
        : null;
      this.#tokens.set(key, user, user ? this.#ttl.authenticated : this.#ttl.unauthenticated);
      return user;
    });
    return answer === UNAVAILABLE ? UNAVAILABLE : (answer as Requester | null) ?? undefined;
  }

  /**
   * Whether `who` may do what `attributes` say. A requester described in more than
   * `MAX_QUESTION_BYTES` (a caller's claim, in an unauthenticated review) may not: that question
   * is not sent on.
   */
  async authorize(who: Requester, attributes: AccessAttributes): Promise<boolean | Unavailable> {
    const question = new TextEncoder().encode(
      JSON.stringify([who.username, who.uid, who.groups, who.extra, attributes]),
    );
    if (question.length > MAX_QUESTION_BYTES) {
      this.#warnings.warn(
        "large question",
        "a SubjectAccessReview of {bytes} bytes was not asked (at most {max}): answered no",
        { bytes: question.length, max: MAX_QUESTION_BYTES },
      );
      return false;
    }
    // The caches hold a digest of the question, never the caller's words: a key's size is fixed.
    const key = await digest(question);
    const known = this.#decisions.get(key);
    if (known !== undefined) return known;
    return await this.#once(`decision ${key}`, async () => {
      const review = await this.#ask(SUBJECT_ACCESS_REVIEW, {
        spec: {
          user: who.username,
          uid: who.uid,
          groups: who.groups,
          extra: who.extra,
          ...attributes,
        },
      }) as { status?: { allowed?: boolean } } | Unavailable;
      if (review === UNAVAILABLE) return UNAVAILABLE;
      const allowed = review.status?.allowed === true;
      this.#decisions.set(key, allowed, allowed ? this.#ttl.allowed : this.#ttl.denied);
      return allowed;
    }) as boolean | Unavailable;
  }

  /** One question in flight per key: a burst of the same question costs one request. */
  #once(key: string, ask: () => Promise<unknown>): Promise<unknown> {
    let asking = this.#asking.get(key);
    if (!asking) {
      asking = ask().finally(() => this.#asking.delete(key));
      this.#asking.set(key, asking);
    }
    return asking;
  }

  async #ask(resource: Resource<KubeObject>, body: Record<string, unknown>): Promise<unknown> {
    if (!this.budget.tryTake()) {
      this.#warnings.warn(
        "budget",
        "{kind}s refused: the budget for them ({qps} a second) is spent",
        { kind: resource.kind, qps: this.budget.qps },
      );
      return UNAVAILABLE;
    }
    try {
      return await this.#client.create(resource, body as KubeObject, {
        timeoutMs: this.#timeoutMs,
      });
    } catch (error) {
      this.#warnings.warn(`failed ${resource.kind}`, "a {kind} failed: {error}", {
        kind: resource.kind,
        error: (error as Error).message,
      });
      return UNAVAILABLE;
    }
  }
}

async function digest(text: Uint8Array<ArrayBuffer>): Promise<string> {
  const bytes = await crypto.subtle.digest("SHA-256", text);
  return [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** A map whose entries expire, and that forgets its oldest entries beyond `size`. */
export class TtlCache<V> {
  readonly #entries = new Map<string, { value: V; expires: number }>();

  /** An empty cache of at most `size` entries; `now` reads the clock entries expire by. */
  constructor(readonly size: number, readonly now: () => number = () => performance.now()) {}

  /** The value under `key`, or undefined when there is none or it has expired. */
  get(key: string): V | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.expires <= this.now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  /** Puts `value` under `key` for `ttlMs`, forgetting the oldest entries beyond `size`. */
  set(key: string, value: V, ttlMs: number): void {
    this.#entries.delete(key);
    this.#entries.set(key, { value, expires: this.now() + ttlMs });
    // Maps keep insertion order: the first key is the oldest.
    while (this.#entries.size > this.size) {
      this.#entries.delete(this.#entries.keys().next().value!);
    }
  }

  /** Entries held, expired ones not yet noticed included. */
  get length(): number {
    return this.#entries.size;
  }
}
