/**
 * Serves `/healthz`, `/readyz` (kube-apiserver's format: 200 `ok`, or 500 naming the failing
 * check; `?verbose` lists each) and `/metrics` (Prometheus text).
 */
import { PROMETHEUS_CONTENT_TYPE, type Registry } from "./metrics.ts";

/** A named check; returns nothing when healthy, or a reason. */
export type Check = () => string | undefined;

export class Checks {
  readonly #checks = new Map<string, Check>();

  add(name: string, check: Check): void {
    this.#checks.set(name, check);
  }

  /** Status code and body, the way kube-apiserver answers its own probes. */
  respond(verbose: boolean): { status: number; body: string } {
    const results = [...this.#checks].map(([name, check]) => {
      let reason: string | undefined;
      try {
        reason = check();
      } catch (error) {
        reason = error instanceof Error ? error.message : String(error);
      }
      return { name, reason };
    });
    const failed = results.filter((r) => r.reason !== undefined);
    if (!verbose && !failed.length) return { status: 200, body: "ok" };
    const lines = results.map((r) =>
      r.reason === undefined ? `[+]${r.name} ok` : `[-]${r.name} failed: ${r.reason}`
    );
    lines.push(failed.length ? `${failed.map((f) => f.name).join(", ")} failed` : "ok");
    return { status: failed.length ? 500 : 200, body: lines.join("\n") + "\n" };
  }
}

/** `host:port`, `:port` (all interfaces) or `0`/`` (disabled). */
export function parseBindAddress(
  address: string,
  flag: string,
): { hostname: string; port: number } | undefined {
  if (address === "0" || address === "") return undefined;
  const match = address.match(/^(\[[^\]]+\]|[^:]*):(\d+)$/);
  if (!match || Number(match[2]) > 65535) {
    throw new TypeError(`${flag} "${address}" is not host:port, :port or 0 (disabled)`);
  }
  return { hostname: match[1].replace(/^\[|\]$/g, "") || "0.0.0.0", port: Number(match[2]) };
}

export interface EndpointServer {
  /** The port actually bound (useful with port 0). */
  port: number;
  shutdown(): Promise<void>;
}

/** Serves the given routes on one address. */
export function serveEndpoints(
  bind: { hostname: string; port: number },
  routes: { metrics?: Registry; healthz?: Checks; readyz?: Checks },
): EndpointServer {
  // Each answer closes its connection: kubelets and scrapers open a new one per request anyway,
  // and an idle keep-alive connection would hold the process open for its timeout after shutdown.
  const server = Deno.serve({ ...bind, onListen: () => {} }, (request) => {
    const response = route(request, routes);
    response.headers.set("connection", "close");
    return response;
  });
  return { port: server.addr.port, shutdown: () => server.shutdown() };
}

function route(
  request: Request,
  routes: { metrics?: Registry; healthz?: Checks; readyz?: Checks },
): Response {
  const url = new URL(request.url);
  const verbose = url.searchParams.has("verbose");
  if (url.pathname === "/metrics" && routes.metrics) {
    return new Response(routes.metrics.render(), {
      headers: { "content-type": PROMETHEUS_CONTENT_TYPE },
    });
  }
  const checks = url.pathname === "/healthz"
    ? routes.healthz
    : url.pathname === "/readyz"
    ? routes.readyz
    : undefined;
  if (checks) {
    const { status, body } = checks.respond(verbose);
    return new Response(body, {
      status,
      headers: { "content-type": "text/plain; charset=utf-8" },
    });
  }
  return new Response("not found\n", { status: 404 });
}
