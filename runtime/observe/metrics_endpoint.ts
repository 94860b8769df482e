/**
 * `/metrics` as a route: Prometheus text, and, when an AccessReviewer is given, only for callers
 * the API server says may `get` it, as controller-runtime's `WithAuthenticationAndAuthorization`
 * filter does: the bearer token through a TokenReview (no token, or one it does not take: 401),
 * then a SubjectAccessReview of that user for the verb and the path (no: 403). GET and HEAD only;
 * anything else is 405 before any review is asked for, so that it costs the API server nothing.
 */
import type { AccessReviewer } from "./access_review.ts";
import type { Route } from "./http_server.ts";
import { PROMETHEUS_CONTENT_TYPE, type Registry } from "./metrics.ts";

/** What a Prometheus must be granted: the ClusterRole deploy/ ships as `…-metrics-reader`. */
export const METRICS_READER_RULES = [{ nonResourceURLs: ["/metrics"], verbs: ["get"] }];

/**
 * `/metrics` of `registry`, for callers `reviewer` lets in (everyone without one). A 403 names
 * `readerRole`, the ClusterRole a caller should be bound to, when it is given.
 */
export function metricsRoute(
  registry: Registry,
  reviewer?: AccessReviewer,
  options: { readerRole?: string } = {},
): Route {
  return {
    path: "/metrics",
    methods: ["GET", "HEAD"],
    async handle(request, { path }) {
      if (reviewer) {
        const refusal = await authorize(request, path, reviewer, options.readerRole);
        if (refusal) return refusal;
      }
      return new Response(registry.render(), {
        headers: { "content-type": PROMETHEUS_CONTENT_TYPE },
      });
    },
  };
}

/**
 * Whether the caller of `request` may `get` `path`: undefined when it may, else the refusal to
 * send (401 without a token the API server takes, 403 without the grant, 503 when the API server
 * cannot say). A 403 names `readerRole`, the ClusterRole that grants it, when it is given.
 */
export async function authorize(
  request: Request,
  path: string,
  reviewer: AccessReviewer,
  readerRole: string | undefined,
): Promise<Response | undefined> {
  const token = request.headers.get("authorization")?.match(/^Bearer\s+(\S+)\s*$/i)?.[1];
  if (!token) {
    return refuse(401, "Unauthorized: send a bearer token (a ServiceAccount's)", {
      "www-authenticate": 'Bearer realm="metrics"',
    });
  }
  const who = await reviewer.authenticate(token);
  if (who === "unavailable") return unavailable();
  if (!who) {
    return refuse(401, "Unauthorized: the API server does not take this token", {
      "www-authenticate": 'Bearer realm="metrics", error="invalid_token"',
    });
  }
  // HEAD is a GET without the body: the same permission.
  const allowed = await reviewer.authorize(who, { nonResourceAttributes: { path, verb: "get" } });
  if (allowed === "unavailable") return unavailable();
  if (!allowed) {
    return refuse(
      403,
      `Forbidden: user "${who.username}" may not get ${path} (${
        readerRole
          ? `bind it to the ClusterRole ${readerRole}`
          : "grant it get on this path with a ClusterRole"
      })`,
    );
  }
  return undefined;
}

function unavailable(): Response {
  return refuse(503, "cannot check the token with the API server now; try again", {
    "retry-after": "5",
  });
}

function refuse(status: number, message: string, headers: Record<string, string> = {}): Response {
  return new Response(`${message}\n`, {
    status,
    headers: { "content-type": "text/plain; charset=utf-8", ...headers },
  });
}
