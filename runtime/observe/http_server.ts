/**
 * Every server of ours (metrics, probes, webhooks): routes on Deno.serve, behind the TCP front
 * that bounds connections (`http_front.ts`), with what one request may cost bounded too: requests
 * in flight, a body's size (refused by its declared length before a byte is read, or as it
 * arrives when it declares none), the bytes of all bodies held at once (`request_body.ts`), and
 * unknown paths and methods answered 404 and 405 with the warnings about them throttled. Over
 * HTTPS, the serving certificate is asked for again every few seconds and a new one is taken
 * without a pause: a new TLS backend gets the new connections while the old one finishes what it
 * has (Deno can neither swap a listener's certificate nor bind a port twice without unstable
 * flags).
 */
import type { Logger } from "./logging.ts";
import { HttpError } from "./http_error.ts";
import {
  type BindAddress,
  type ConnectionLimits,
  DEFAULT_CONNECTION_LIMITS,
  HttpFront,
} from "./http_front.ts";
import { CertificatePending, explainTlsError } from "./serving_certificate.ts";
import { WarningThrottle } from "./warning_throttle.ts";
import { certificateExpiryGauge, certificateNotAfter } from "./certificate_expiry.ts";
import type { Gauge, Registry } from "./metrics.ts";
import { BodyBudget, CLOSE, declaresBody, readBody } from "./request_body.ts";

/** A serving certificate and key, PEM. */
export interface ServingCertificate {
  /** The certificate chain, PEM. */
  cert: string;
  /** Its private key, PEM. */
  key: string;
}

/** What requests may cost once a connection is open. */
export interface RequestLimits {
  /** Requests handled at once; more are answered 503 with `Retry-After`. */
  maxConcurrentRequests: number;
  /**
   * The largest body one request may have: a larger declared `Content-Length` is answered 413
   * before anything is read, and a body without one is cut off there. 0: no body at all.
   */
  maxBodyBytes: number;
  /**
   * Bytes of request bodies held at once by all requests together; a request whose body would
   * pass it is answered 503. What many concurrent large bodies may cost, in all.
   */
  maxBufferedBytes: number;
}

/** Everything a caller may cost a server: its connections and its requests. */
export type ServerLimits = ConnectionLimits & RequestLimits;

/**
 * What a server allows unless told otherwise: 64 requests at once and no request bodies (a server
 * that reads them, the webhooks', sets its own).
 */
export const DEFAULT_REQUEST_LIMITS: RequestLimits = {
  maxConcurrentRequests: 64,
  maxBodyBytes: 0,
  maxBufferedBytes: 0,
};

/** What a route's handler gets besides the request. */
export interface RequestContext {
  /** The body, read as it arrives within the limits; throws an HttpError (413, 408, 503). */
  body(): Promise<Uint8Array<ArrayBuffer>>;
  /** The caller's address, as the front saw it. */
  caller: string;
  /** The path, without the query. */
  path: string;
}

/** A path a server answers, the methods it takes there, and its handler. */
export interface Route {
  /** An exact path (`/metrics`), or a prefix that ends in `/` (`/readyz/`). */
  path: string;
  /** Methods served; others are answered 405 with `Allow`. */
  methods: readonly string[];
  /** Answers a request; an HttpError thrown becomes its status and message, anything else a 500. */
  handle(request: Request, context: RequestContext): Response | Promise<Response>;
}

/** One server: its address, routes, TLS and limits. */
export interface HttpServerOptions {
  /** What the server is called in logs and in `/readyz`: `webhooks`, `metrics`, `probes`. */
  name: string;
  /** Where it listens. */
  bind: BindAddress;
  /** What it answers; a request for any other path gets 404. */
  routes: Route[];
  /**
   * HTTPS with this certificate, asked for again every `reloadMs` (default 2 s). Undefined, or a
   * CertificatePending thrown, while there is none yet (its message says why, in `/readyz`).
   */
  tls?: { certificate: () => Promise<ServingCertificate | undefined>; reloadMs?: number };
  /** Overrides of the connection and request limits' defaults, field by field. */
  limits?: Partial<ServerLimits>;
  /**
   * Where `serving_certificate_expiration_timestamp_seconds{server}` goes: when the certificate
   * served now stops being valid (set once one is served over HTTPS).
   */
  registry?: Registry;
  /**
   * Told of every request for one of `routes` (by the route's path, never the caller's) as it
   * starts; the function it returns is told the answer's status. Refusals by the server's own
   * limits (405, 413, 503) count as the route's answers too.
   */
  observe?: (route: string) => (status: number) => void;
  /** Where its warnings go (throttled), and what it says about its certificate. */
  log: Logger;
}

interface Backend {
  server: Deno.HttpServer<Deno.NetAddr>;
  port: number;
}

/**
 * A server of ours (metrics, probes, webhooks): routes behind the TCP front, within limits, over
 * HTTP or HTTPS with a certificate taken again as it rotates (see the module doc).
 */
export class HttpServer {
  readonly #options: HttpServerOptions;
  readonly #limits: ServerLimits;
  readonly #front: HttpFront;
  readonly #warnings: WarningThrottle;
  readonly #expiry?: Gauge;
  #backend?: Backend;
  #serving?: ServingCertificate;
  /** The last pair the TLS stack refused: not tried (nor logged) again until the files change. */
  #refused?: ServingCertificate;
  #problem = "not started";
  /** The problem last logged. */
  #told?: string;
  #reload?: ReturnType<typeof setInterval>;
  #refreshing?: Promise<void>;
  #stopped = false;
  #inFlight = 0;
  /** The bytes of bodies held at once by all requests. */
  readonly #bodies: BodyBudget;
  /** Certificates taken after the first. */
  rotations = 0;
  /** Requests answered, by status; what tests and status pages look at. */
  readonly statuses = new Map<number, number>();

  /** A server not yet listening (`start`); unset limits are the defaults. */
  constructor(options: HttpServerOptions) {
    this.#options = options;
    this.#limits = {
      ...DEFAULT_CONNECTION_LIMITS,
      ...DEFAULT_REQUEST_LIMITS,
      ...options.limits,
    };
    this.#bodies = new BodyBudget(this.#limits.maxBufferedBytes);
    this.#warnings = new WarningThrottle(options.log);
    if (options.registry && options.tls) this.#expiry = certificateExpiryGauge(options.registry);
    this.#front = new HttpFront({
      bind: options.bind,
      name: options.name,
      tls: Boolean(options.tls),
      limits: this.#limits,
      backend: () => this.#backend?.port,
      log: options.log,
    });
  }

  /** The public port, once listening. */
  get port(): number | undefined {
    return this.#front.port;
  }

  /** Why it does not serve, or undefined when it does (for `/readyz`). */
  get problem(): string | undefined {
    return this.#backend ? undefined : this.#problem;
  }

  /** The front's counts of connections it closed, and connections open now. */
  get connections(): HttpFront["counts"] & { open: number } {
    return { ...this.#front.counts, open: this.#front.open };
  }

  /**
   * Listens (a busy address is a StartupError), and serves: at once over plain HTTP, once a
   * certificate is at hand over HTTPS (looked for again every `reloadMs`).
   */
  async start(): Promise<void> {
    this.#front.listen();
    if (!this.#options.tls) {
      this.#backend = this.#serve();
      return;
    }
    await this.refresh();
    this.#reload = setInterval(() => void this.refresh(), this.#options.tls.reloadMs ?? 2_000);
  }

  /**
   * Stops accepting, lets the requests in flight finish (each is bounded by `requestMs`), then
   * closes what is left. A refresh still waiting on its certificate finds the server stopped.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#reload);
    await this.#front.stopAccepting();
    await this.#backend?.server.shutdown();
    this.#front.closeAll();
    this.#backend = undefined;
  }

  /** Takes the certificate now on offer, if it is new; one look at a time. */
  refresh(): Promise<void> {
    this.#refreshing ??= this.#refresh().finally(() => this.#refreshing = undefined);
    return this.#refreshing;
  }

  async #refresh(): Promise<void> {
    let next: ServingCertificate | undefined;
    try {
      next = await this.#options.tls!.certificate();
    } catch (error) {
      const message = (error as Error).message;
      const pending = error instanceof CertificatePending;
      this.#tell(
        pending ? "info" : "error",
        pending ? `no serving certificate yet: ${message}` : `no serving certificate: ${message}`,
      );
      return;
    }
    if (!next) {
      this.#tell("info", "no serving certificate yet");
      return;
    }
    if (this.#stopped) return;
    if (same(next, this.#serving) || same(next, this.#refused)) return;
    let backend: Backend;
    try {
      backend = this.#serve(next);
    } catch (error) {
      this.#refused = next;
      this.#tell(
        "error",
        `the serving certificate does not load: ${explainTlsError((error as Error).message)}${
          this.#backend ? "; still serving the one before" : ""
        }`,
      );
      return;
    }
    const old = this.#backend;
    this.#backend = backend;
    this.#serving = next;
    this.#refused = undefined;
    this.#told = undefined;
    this.#exposeExpiry(next);
    if (old) {
      this.rotations++;
      this.#options.log.info("{server}: took a new certificate", { server: this.#options.name });
      await old.server.shutdown();
    }
  }

  /** Sets the expiry gauge to the certificate now served (or drops it when it cannot be read). */
  #exposeExpiry(certificate: ServingCertificate): void {
    if (!this.#expiry) return;
    const labels = { server: this.#options.name };
    const notAfter = certificateNotAfter(certificate.cert);
    if (notAfter) this.#expiry.set(labels, notAfter.getTime() / 1000);
    else this.#expiry.remove(labels);
  }

  /**
   * Why it does not serve now (or serves an older certificate): in `/readyz` while not serving,
   * and in the log once each time it changes, not at every look.
   */
  #tell(level: "info" | "error", problem: string): void {
    if (problem === this.#told) return;
    this.#told = problem;
    if (!this.#backend) this.#problem = problem;
    this.#options.log[level]("{server}: {problem}", { server: this.#options.name, problem });
  }

  #serve(certificate?: ServingCertificate): Backend {
    const server = Deno.serve({
      hostname: "127.0.0.1",
      port: 0,
      ...certificate,
      onListen: () => {},
      // Whatever escapes a handler: a plain 500, never JavaScript's words.
      onError: () => new Response("internal error\n", { status: 500 }),
    }, (request, info) => this.#handle(request, info));
    return { server, port: server.addr.port };
  }

  async #handle(request: Request, info: Deno.ServeHandlerInfo<Deno.NetAddr>): Promise<Response> {
    const body: BodyState = { ended: false, busy: false };
    let response = await this.#answer(request, info, body);
    this.statuses.set(response.status, (this.statuses.get(response.status) ?? 0) + 1);
    // A refusal ends the connection of a body it left unread: Deno.serve would go on reading
    // it, or wait for what the caller declared and never sends. "Busy, try again" does not: it
    // refuses nothing, and over HTTP/2 the end of a connection ends the caller's other requests.
    if (response.status >= 400 && !body.ended && !body.busy && declaresBody(request)) {
      response = withClose(response);
    }
    // Over HTTP/2 the header is dropped: the front ends the connection once the answer is out.
    if (response.headers.get("connection") === "close") {
      this.#front.closeAfterAnswer(info.remoteAddr.port);
    }
    return response;
  }

  async #answer(
    request: Request,
    info: Deno.ServeHandlerInfo<Deno.NetAddr>,
    body: BodyState,
  ): Promise<Response> {
    const caller = this.#front.callerOf(info.remoteAddr.port) ?? "unknown";
    let path: string;
    try {
      path = new URL(request.url).pathname;
    } catch {
      return text(400, "not a URL\n");
    }
    const route = this.#options.routes.find((r) =>
      r.path.endsWith("/") ? path.startsWith(r.path) : path === r.path
    );
    if (!route) {
      // One line per 30 s however many: a caller's paths must not fill our logs.
      this.#warnings.warn("unknown path", "{server}: 404 for {path} from {caller}", {
        server: this.#options.name,
        path: printable(path),
        caller,
      });
      return text(404, "not found\n");
    }
    const answered = this.#options.observe?.(route.path);
    let status = 500;
    try {
      const response = await this.#routed(route, request, path, caller, body);
      status = response.status;
      return response;
    } finally {
      answered?.(status);
    }
  }

  /** The answer of a route: the server's limits first, then its handler. */
  async #routed(
    route: Route,
    request: Request,
    path: string,
    caller: string,
    body: BodyState,
  ): Promise<Response> {
    if (!route.methods.includes(request.method)) {
      return text(405, `${route.methods.join(" or ")} only\n`, {
        allow: route.methods.join(", "),
      });
    }
    const declared = request.headers.get("content-length");
    if (declared !== null && !(Number(declared) <= this.#limits.maxBodyBytes)) {
      // The connection goes with the answer: what the caller still sends is not read.
      return text(
        413,
        `a body of at most ${this.#limits.maxBodyBytes} bytes, not ${printable(declared)}\n`,
        CLOSE,
      );
    }
    if (this.#inFlight >= this.#limits.maxConcurrentRequests) {
      body.busy = true;
      return text(503, "too many requests at once; try again\n", { "retry-after": "1" });
    }
    this.#inFlight++;
    let held = 0;
    // A timer only while a body is read, cleared with it: a deadline per request that outlived
    // it would keep the request's closures for `requestMs` after its answer.
    const deadline = performance.now() + this.#limits.requestMs;
    const context: RequestContext = {
      caller,
      path,
      body: async () => {
        const bytes = await readBody(request, {
          maxBytes: this.#limits.maxBodyBytes,
          deadline,
          budget: this.#bodies,
          taken: (n) => held += n,
        });
        body.ended = true;
        return bytes;
      },
    };
    try {
      return await route.handle(request, context);
    } catch (error) {
      if (error instanceof HttpError) {
        return text(error.status, `${error.message}\n`, error.headers);
      }
      this.#warnings.warn("handler", "{server}: {path} failed: {error}", {
        server: this.#options.name,
        path,
        error: (error as Error)?.message ?? String(error),
      });
      return text(500, "internal error; the operator's log says more\n");
    } finally {
      this.#inFlight--;
      this.#bodies.give(held);
    }
  }
}

/** True when `a` and `b` are the same pair. */
function same(a: ServingCertificate, b: ServingCertificate | undefined): boolean {
  return b !== undefined && a.cert === b.cert && a.key === b.key;
}

/** Whether a request's body was read to its end, and whether it was turned away as "busy". */
interface BodyState {
  ended: boolean;
  busy: boolean;
}

/** `response` with `Connection: close`. */
function withClose(response: Response): Response {
  const headers = new Headers(response.headers);
  headers.set("connection", "close");
  return new Response(response.body, {
    status: response.status,
    statusText: response.statusText,
    headers,
  });
}

function text(status: number, body: string, headers: HeadersInit = {}): Response {
  return new Response(body, {
    status,
    headers: {
      "content-type": "text/plain; charset=utf-8",
      "x-content-type-options": "nosniff",
      ...Object.fromEntries(new Headers(headers)),
    },
  });
}

/** A caller's string as a log or a message may repeat it: bounded, without control characters. */
export function printable(value: string): string {
  const clean = value.replace(/[^\x20-\x7e]/g, "?");
  return clean.length > 100 ? `${clean.slice(0, 100)}…` : clean;
}
