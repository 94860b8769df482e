/**
 * Serves `/healthz`, `/readyz` (kube-apiserver's format: 200 `ok`, or 500 naming the failing
 * check; `?verbose` lists each) and `/metrics` (Prometheus text).
 */
import { StartupError } from "../kube/preflight.ts";
import { PROMETHEUS_CONTENT_TYPE, type Registry } from "./metrics.ts";

/**
 * A named check; returns nothing when healthy, a reason when not, or `{ note }` to pass while
 * saying something worth knowing (a missing optional kind): a note is listed on every answer.
 */
export type Check = () => string | undefined | { note: string };

/** How a probe is asked: kube-apiserver's query parameters. */
export interface ProbeQuery {
  /** `?verbose`: list every check even when all pass. */
  verbose?: boolean;
  /** `?exclude=name` (repeatable): leave these checks out. */
  exclude?: string[];
}

export class Checks {
  readonly #checks = new Map<string, Check>();

  /** `name` is what the endpoint is called in its trailer: `healthz`, `readyz`. */
  constructor(readonly name = "healthz") {}

  add(name: string, check: Check): void {
    this.#checks.set(name, check);
  }

  /**
   * Status code and body the way kube-apiserver answers its probes: `ok`, or each check as
   * `[+]name ok` / `[-]name failed: reason` / `[+]name excluded: ok` and the trailer
   * `<probe> check passed|failed`; 500 when one failed.
   */
  respond(query: ProbeQuery = {}): { status: number; body: string } {
    const excluded = new Set(query.exclude ?? []);
    const lines: string[] = [];
    let failed = false;
    let noted = false;
    for (const [name, check] of this.#checks) {
      if (excluded.delete(name)) {
        lines.push(`[+]${name} excluded: ok`);
        continue;
      }
      const reason = run(check);
      if (reason === undefined) lines.push(`[+]${name} ok`);
      else if (typeof reason === "object") {
        noted = true;
        lines.push(`[+]${name} ok: ${reason.note}`);
      } else {
        failed = true;
        lines.push(`[-]${name} failed: ${reason}`);
      }
    }
    if (excluded.size) {
      lines.push(
        `warn: some health checks cannot be excluded: no matches for ${
          [...excluded].map((e) => `"${e}"`).join(",")
        }`,
      );
    }
    if (!failed && !noted && !query.verbose) return { status: 200, body: "ok" };
    lines.push(`${this.name} check ${failed ? "failed" : "passed"}`);
    return { status: failed ? 500 : 200, body: lines.join("\n") + "\n" };
  }

  /** One check alone (`/readyz/<check>`): `ok`, or 500 with the reason. */
  respondOne(name: string): { status: number; body: string } {
    const check = this.#checks.get(name);
    if (!check) return { status: 404, body: `no check named "${name}"\n` };
    const reason = run(check);
    if (reason === undefined) return { status: 200, body: "ok" };
    if (typeof reason === "object") return { status: 200, body: `ok: ${reason.note}\n` };
    return { status: 500, body: `internal server error: ${reason}\n` };
  }
}

function run(check: Check): ReturnType<Check> {
  try {
    return check();
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** Where to listen; `flag` names the setting in errors (`--metrics-bind-address`). */
export interface BindAddress {
  hostname: string;
  port: number;
  flag?: string;
}

/** `host:port`, `:port` (all interfaces) or `0`/`` (disabled). */
export function parseBindAddress(address: string, flag: string): BindAddress | undefined {
  if (address === "0" || address === "") return undefined;
  const match = address.match(/^(\[[^\]]+\]|[^:]*):(\d+)$/);
  if (!match || Number(match[2]) > 65535) {
    throw new TypeError(`${flag} "${address}" is not host:port, :port or 0 (disabled)`);
  }
  return {
    hostname: match[1].replace(/^\[|\]$/g, "") || "0.0.0.0",
    port: Number(match[2]),
    flag,
  };
}

export interface EndpointServer {
  /** The port actually bound (useful with port 0). */
  port: number;
  shutdown(): Promise<void>;
}

/** Serves the given routes on one address. */
export function serveEndpoints(
  bind: BindAddress,
  routes: { metrics?: Registry; healthz?: Checks; readyz?: Checks },
): EndpointServer {
  // Each answer closes its connection: kubelets and scrapers open a new one per request anyway,
  // and an idle keep-alive connection would hold the process open for its timeout after shutdown.
  let server: Deno.HttpServer<Deno.NetAddr>;
  try {
    server = Deno.serve({ hostname: bind.hostname, port: bind.port, onListen: () => {} }, serve);
  } catch (error) {
    const address = `${bind.flag ? `${bind.flag} ` : ""}${bind.hostname}:${bind.port}`;
    if (error instanceof Deno.errors.AddrInUse) {
      throw new StartupError(
        `${address} is already in use by another process: choose another port, or 0 to turn ` +
          `it off`,
      );
    }
    if (
      error instanceof Deno.errors.PermissionDenied || error instanceof Deno.errors.AddrNotAvailable
    ) {
      throw new StartupError(
        `cannot listen on ${address} (${(error as Error).message}): ports below 1024 need ` +
          `privileges, and the host must be an address of this machine`,
      );
    }
    throw error;
  }
  return { port: server.addr.port, shutdown: () => server.shutdown() };

  function serve(request: Request): Response {
    const response = route(request, routes);
    response.headers.set("connection", "close");
    return response;
  }
}

function route(
  request: Request,
  routes: { metrics?: Registry; healthz?: Checks; readyz?: Checks },
): Response {
  const url = new URL(request.url);
  if (url.pathname === "/metrics" && routes.metrics) {
    return new Response(routes.metrics.render(), {
      headers: { "content-type": PROMETHEUS_CONTENT_TYPE },
    });
  }
  const [, probe, check, ...more] = url.pathname.split("/");
  const checks = probe === "healthz" || probe === "livez"
    ? routes.healthz
    : probe === "readyz"
    ? routes.readyz
    : undefined;
  if (checks && !more.length) {
    const { status, body } = check ? checks.respondOne(check) : checks.respond({
      verbose: url.searchParams.has("verbose"),
      exclude: url.searchParams.getAll("exclude"),
    });
    return new Response(body, {
      status,
      headers: { "content-type": "text/plain; charset=utf-8", "x-content-type-options": "nosniff" },
    });
  }
  return new Response("not found\n", { status: 404 });
}
