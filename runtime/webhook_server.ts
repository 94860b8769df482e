/**
 * Serves the plugins' admission (defaulting and validation) and the CRDs' conversion over HTTPS,
 * on every replica: `POST /mutate/<plugin>`, `/validate/<plugin>` (AdmissionReview v1) and
 * `/convert` (ConversionReview v1). The serving certificate comes from files (cert-manager's
 * `tls.crt` and `tls.key`) or from a provider (the self-managed Secret), and a new one is taken
 * without a pause in service. The public port is a plain TCP listener that never closes; it
 * forwards each connection to a TLS server on loopback, and a new certificate is a new TLS
 * server: new connections go to it while the old one finishes what it has (Deno cannot swap a
 * listener's certificate, nor bind a port twice without unstable flags).
 */
import type { KubeObject, Unstructured } from "../kube/client.ts";
import type { Logger } from "./logging.ts";
import type { AdmissionContext, AdmissionRequest, Plugin } from "./plugin.ts";
import type { BindAddress } from "./probes.ts";
import { causeOf, WarningThrottle } from "./warning_throttle.ts";

/** How one CRD's objects change between its versions. */
export interface Conversion {
  group: string;
  kind: string;
  /** The object as `apiVersion` (`group/version`); throws for a version it does not know. */
  convert(object: Unstructured, apiVersion: string): Unstructured;
}

/** A serving certificate and key, PEM. */
export interface ServingCertificate {
  cert: string;
  key: string;
}

export interface WebhookServerOptions {
  bind: BindAddress;
  plugins: Plugin[];
  conversions?: Conversion[];
  /** The serving certificate now; asked again every `reloadMs` and used when it changed. */
  certificate: () => Promise<ServingCertificate | undefined>;
  /** How often to look for a new certificate; 2 s. */
  reloadMs?: number;
  context: AdmissionContext;
  log: Logger;
}

interface Review {
  apiVersion?: string;
  kind?: string;
  request?: {
    uid: string;
    operation: AdmissionRequest["operation"];
    namespace?: string;
    name?: string;
    object?: KubeObject | null;
    oldObject?: KubeObject | null;
    dryRun?: boolean;
    userInfo?: { username?: string };
    desiredAPIVersion?: string;
    objects?: Unstructured[];
  };
}

/** The admission paths of a plugin, as a webhook configuration names them. */
export function webhookPaths(plugin: Pick<Plugin, "name">): { mutate: string; validate: string } {
  return { mutate: `/mutate/${plugin.name}`, validate: `/validate/${plugin.name}` };
}

export class WebhookServer {
  readonly #options: WebhookServerOptions;
  readonly #warnings: WarningThrottle;
  #front?: Deno.TcpListener;
  #accepting?: Promise<void>;
  #backend?: { server: Deno.HttpServer<Deno.NetAddr>; port: number };
  readonly #links = new Set<Deno.Conn>();
  #serving?: ServingCertificate;
  #problem = "not started";
  #reload?: ReturnType<typeof setInterval>;
  #refreshing?: Promise<void>;
  #stopped = false;
  /** Certificates taken after the first. */
  rotations = 0;
  /** Requests answered or failed, by path: what a rotation must not interrupt. */
  readonly answered = new Map<string, number>();

  constructor(options: WebhookServerOptions) {
    this.#options = options;
    this.#warnings = new WarningThrottle(options.log);
  }

  /** The public port, once listening. */
  get port(): number | undefined {
    return this.#front ? (this.#front.addr as Deno.NetAddr).port : undefined;
  }

  /** Why webhooks are not served, or undefined when they are (for `/readyz`). */
  get problem(): string | undefined {
    return this.#backend ? undefined : this.#problem;
  }

  /** Listens, and serves once a certificate is at hand (looked for again every `reloadMs`). */
  async start(): Promise<void> {
    const { hostname, port, flag } = this.#options.bind;
    try {
      this.#front = Deno.listen({ hostname, port });
    } catch (error) {
      throw new Error(
        `${flag ?? "webhook bind address"} ${hostname}:${port}: ${(error as Error).message}`,
      );
    }
    this.#accepting = this.#accept(this.#front);
    await this.refresh();
    this.#reload = setInterval(() => void this.refresh(), this.#options.reloadMs ?? 2_000);
    this.#options.log.info("serving webhooks on {address}", {
      address: `${hostname}:${this.port}`,
    });
  }

  /**
   * Stops accepting, lets the requests in flight finish, then closes what is left. A refresh
   * still waiting on its certificate source is not waited for: it finds the server stopped.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#reload);
    this.#front?.close();
    await this.#accepting;
    await this.#backend?.server.shutdown();
    for (const conn of this.#links) closeConn(conn);
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
      next = await this.#options.certificate();
    } catch (error) {
      this.#problem = `no serving certificate: ${(error as Error).message}`;
      return;
    }
    if (!next) {
      this.#problem = "no serving certificate yet";
      return;
    }
    if (this.#stopped) return;
    if (this.#serving && next.cert === this.#serving.cert && next.key === this.#serving.key) return;
    let server: Deno.HttpServer<Deno.NetAddr>;
    try {
      server = Deno.serve({
        hostname: "127.0.0.1",
        port: 0,
        cert: next.cert,
        key: next.key,
        onListen: () => {},
      }, (request) => this.#handle(request));
    } catch (error) {
      this.#problem = `the serving certificate does not load: ${(error as Error).message}`;
      this.#options.log.error("webhook server: {problem}", { problem: this.#problem });
      return;
    }
    const old = this.#backend;
    this.#backend = { server, port: server.addr.port };
    this.#serving = next;
    if (old) {
      this.rotations++;
      this.#options.log.info("webhook server took a new certificate");
      await old.server.shutdown();
    }
  }

  async #accept(front: Deno.TcpListener): Promise<void> {
    for (;;) {
      let client: Deno.Conn;
      try {
        client = await front.accept();
      } catch {
        return; // closed
      }
      this.#forward(client).catch(() => {});
    }
  }

  /** Joins a client to the TLS server of the moment, byte for byte, until either side ends. */
  async #forward(client: Deno.Conn): Promise<void> {
    const backend = this.#backend;
    if (!backend) return closeConn(client);
    let server: Deno.Conn;
    try {
      server = await Deno.connect({ hostname: "127.0.0.1", port: backend.port });
    } catch {
      return closeConn(client);
    }
    this.#links.add(client).add(server);
    await Promise.allSettled([
      client.readable.pipeTo(server.writable),
      server.readable.pipeTo(client.writable),
    ]);
    for (const conn of [client, server]) {
      this.#links.delete(conn);
      closeConn(conn);
    }
  }

  async #handle(request: Request): Promise<Response> {
    const path = new URL(request.url).pathname;
    if (request.method !== "POST") {
      return new Response("POST an AdmissionReview or ConversionReview\n", { status: 405 });
    }
    let review: Review;
    try {
      review = await request.json();
    } catch {
      return new Response("not JSON\n", { status: 400 });
    }
    // Counted by known path only: what a caller puts in a URL must not grow our memory.
    const known = path === "/convert" ||
      this.#options.plugins.some((p) => Object.values(webhookPaths(p)).includes(path));
    const count = (outcome: string) => {
      const key = `${known ? path : "(unknown path)"} ${outcome}`;
      this.answered.set(key, (this.answered.get(key) ?? 0) + 1);
    };
    if (known && !review?.request?.uid) {
      return new Response("no request in the review\n", { status: 400 });
    }
    try {
      const answer = path === "/convert" ? this.#convert(review) : await this.#admit(path, review);
      count("answered");
      return Response.json(answer);
    } catch (error) {
      count("failed");
      this.#warnings.warn(causeOf(error), "webhook {path} failed: {error}", {
        path,
        error: (error as Error).message,
      });
      return new Response(`${(error as Error).message}\n`, { status: 500 });
    }
  }

  #convert(review: Review): unknown {
    const request = review.request!;
    const to = request.desiredAPIVersion!;
    const response = (result: Record<string, unknown>, objects: Unstructured[] = []) => ({
      apiVersion: review.apiVersion ?? "apiextensions.k8s.io/v1",
      kind: "ConversionReview",
      response: { uid: request.uid, convertedObjects: objects, result },
    });
    try {
      const objects = (request.objects ?? []).map((object) => {
        const group = to.split("/")[0];
        const conversion = this.#options.conversions?.find((c) =>
          c.group === group && c.kind === object.kind
        );
        if (!conversion) throw new Error(`no conversion for ${object.kind} in ${group}`);
        return conversion.convert(object, to);
      });
      return response({ status: "Success" }, objects);
    } catch (error) {
      return response({ status: "Failure", message: (error as Error).message });
    }
  }

  async #admit(path: string, review: Review): Promise<unknown> {
    const [, kind, name] = path.split("/");
    const plugin = this.#options.plugins.find((p) => p.name === name);
    if (!plugin || (kind !== "mutate" && kind !== "validate")) {
      throw new Error(`no webhook at ${path}`);
    }
    const request = review.request!;
    const response: Record<string, unknown> = { uid: request.uid, allowed: true };
    const admission: AdmissionRequest = {
      operation: request.operation,
      namespace: request.namespace,
      name: request.name,
      object: request.object ?? undefined,
      oldObject: request.oldObject ?? undefined,
      dryRun: request.dryRun ?? false,
      username: request.userInfo?.username,
    };
    if (kind === "mutate" && plugin.default && request.object) {
      const before = request.object;
      // A plugin may change the copy it is given in place, or return another object.
      const draft = structuredClone(before);
      const after = await plugin.default(draft, this.#options.context) ?? draft;
      const patch = topLevelPatch(before, after);
      if (patch.length) {
        response.patchType = "JSONPatch";
        response.patch = btoa(JSON.stringify(patch));
      }
    }
    if (kind === "validate" && plugin.validate) {
      const verdict = await plugin.validate(admission, this.#options.context) ?? {};
      if (verdict.warnings?.length) response.warnings = verdict.warnings;
      if (verdict.denied) {
        response.allowed = false;
        response.status = { code: 422, reason: "Invalid", message: verdict.denied };
      }
    }
    return {
      apiVersion: review.apiVersion ?? "admission.k8s.io/v1",
      kind: "AdmissionReview",
      response,
    };
  }
}

/** JSON Patch operations that turn `before` into `after`, field by field under the top level. */
function topLevelPatch(before: KubeObject, after: KubeObject): unknown[] {
  const ops: unknown[] = [];
  const a = before as Record<string, unknown>;
  const b = after as Record<string, unknown>;
  const escape = (key: string) => key.replaceAll("~", "~0").replaceAll("/", "~1");
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (JSON.stringify(a[key]) === JSON.stringify(b[key])) continue;
    if (!(key in b)) ops.push({ op: "remove", path: `/${escape(key)}` });
    else ops.push({ op: key in a ? "replace" : "add", path: `/${escape(key)}`, value: b[key] });
  }
  return ops;
}

function closeConn(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // already closed
  }
}
