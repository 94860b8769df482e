/**
 * `/healthz`, `/livez` and `/readyz` the way kube-apiserver answers them (200 `ok`, or 500 naming
 * the failing check; `?verbose` lists each), as routes of an HttpServer.
 */
import type { Route } from "./http_server.ts";

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

/**
 * The checks one component brings to the probes, by name (controller-runtime's
 * `AddHealthzCheck`/`AddReadyzCheck`, asked of the component rather than written for it): a
 * component that can fail says how.
 */
export interface ProbeChecks {
  /** Whether the process should be restarted: `/healthz`, `/livez`. */
  healthz?: Record<string, Check>;
  /** Whether it should get traffic now: `/readyz`. */
  readyz?: Record<string, Check>;
}

/** Both probes of a process, which components register their checks with. */
export class Probes {
  /** The checks of `/healthz` (and `/livez`): whether the process should be restarted. */
  readonly healthz: Checks = new Checks("healthz");
  /** The checks of `/readyz`: whether the process should get traffic now. */
  readonly readyz: Checks = new Checks("readyz");

  /** Adds a component's checks; each probe lists them in the order they were registered. */
  register(checks: ProbeChecks): void {
    for (const [name, check] of Object.entries(checks.healthz ?? {})) this.healthz.add(name, check);
    for (const [name, check] of Object.entries(checks.readyz ?? {})) this.readyz.add(name, check);
  }

  /** The routes that serve them (see `probeRoutes`). */
  routes(): Route[] {
    return probeRoutes(this.healthz, this.readyz);
  }
}

/** The checks of one probe, in the order they were added. */
export class Checks {
  readonly #checks = new Map<string, Check>();

  /** `name` is what the endpoint is called in its trailer: `healthz`, `readyz`. */
  constructor(readonly name = "healthz") {}

  /** Adds (or replaces) the check `name`. */
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

/** The probe routes: `/healthz` (also `/livez`) and `/readyz`, each also `/<probe>/<check>`. */
export function probeRoutes(healthz: Checks, readyz: Checks): Route[] {
  const methods = ["GET", "HEAD"] as const;
  return [["healthz", healthz], ["livez", healthz], ["readyz", readyz]].flatMap((
    [probe, checks],
  ) => {
    const handle = (request: Request) => answer(request, checks as Checks);
    return [
      { path: `/${probe}`, methods, handle },
      { path: `/${probe}/`, methods, handle },
    ];
  });
}

function answer(request: Request, checks: Checks): Response {
  const url = new URL(request.url);
  const [, , check, ...more] = url.pathname.split("/");
  if (more.length) return new Response("not found\n", { status: 404 });
  const { status, body } = check ? checks.respondOne(check) : checks.respond({
    verbose: url.searchParams.has("verbose"),
    exclude: url.searchParams.getAll("exclude"),
  });
  return new Response(body, {
    status,
    headers: { "content-type": "text/plain; charset=utf-8", "x-content-type-options": "nosniff" },
  });
}
