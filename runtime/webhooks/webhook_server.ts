/**
 * Serves the plugins' admission (defaulting and validation) and the CRDs' conversion over HTTPS,
 * on every replica: `POST /mutate/<plugin>`, `/validate/<plugin>` (AdmissionReview v1) and
 * `/convert` (ConversionReview v1), on an HttpServer (bounded connections, bodies and requests;
 * a new certificate taken without a pause). A review is checked before use (`webhook_review.ts`):
 * the right review for the path, the plugin's kind, objects of the shape their version's schema
 * gives (`admission_request.ts`); a conversion refuses what it does not understand rather than
 * invent or drop a field (`crd_conversion.ts`).
 * The callers are not authenticated (the API server presents no credentials by default): what a
 * plugin may look at for them is what the review's requester may read (`requesterMay`).
 */
import type { KubeClient } from "../../kube/client.ts";
import { endSpan, operatorTracer, SpanKind, withSpan } from "../../util/tracer.ts";
import type { KubeObject, Unstructured } from "../../kube/object.ts";
import type { Resource } from "../../kube/resource.ts";
import {
  type AccessReviewer,
  type BindAddress,
  HttpServer,
  type Logger,
  type ProbeChecks,
  type Registry,
  type RequestContext,
  type Route,
  type ServerLimits,
  type ServingCertificate,
  WarningThrottle,
} from "../observe/mod.ts";
import type { AdmissionContext, Plugin } from "../plugin/mod.ts";
import type { CacheReader } from "../cache/mod.ts";
import { admissionRequest } from "./admission_request.ts";
import { judgedVerdict } from "./change_judgement.ts";
import { type Conversion, conversionResponse } from "./crd_conversion.ts";
import { topLevelPatch } from "./top_level_patch.ts";
import { VersionSchemas } from "./version_schemas.ts";
import { webhookObserver } from "./webhook_metrics.ts";
import {
  ADMISSION_REVIEW,
  type AdmissionReviewRequest,
  parseAdmissionReview,
  parseConversionReview,
} from "./webhook_review.ts";

export type { ServingCertificate };

/** What admission reads with: the operator's caches, and a client and reviewer of its own. */
export interface AdmissionReads {
  /** Admission's own client, with a rate limit of its own (not the reconcilers'). */
  client: KubeClient;
  /** The operator's cache of `resource`'s kind, read as a plugin's reconcile reads it. */
  cache<R extends KubeObject>(resource: Resource<R>): CacheReader<R>;
  /** True when the API server serves this kind (e.g. its CRD is installed). */
  installed(resource: Resource): boolean;
  /** Asks whether a review's requester may read something; without it, nobody may. */
  reviewer?: AccessReviewer;
  /** Where admission's warnings go. */
  log: Logger;
}

/**
 * What a WebhookServer serves and how: its address, the plugins' admission and the CRDs'
 * conversions, the certificate and the limits.
 */
export interface WebhookServerOptions {
  /** Where it listens (`--webhook-bind-address`). */
  bind: BindAddress;
  /**
   * The plugins whose `default` and `validate` are served at `/mutate/<plugin>` and
   * `/validate/<plugin>`.
   */
  plugins: Plugin[];
  /** What `/convert` converts, by group and kind. */
  conversions?: Conversion[];
  /** CRDs whose version schemas admitted objects are checked against (conversions' are too). */
  crds?: Unstructured[];
  /** The serving certificate now; asked again every `reloadMs` and used when it changed. */
  certificate: () => Promise<ServingCertificate | undefined>;
  /** How often to look for a new certificate; 2 s. */
  reloadMs?: number;
  /** What a plugin's admission may read, for the review's requester. */
  context: AdmissionReads;
  /** What callers may cost; see ServerLimits. */
  limits?: Partial<ServerLimits>;
  /** Where the webhook metrics (webhook_metrics.ts) and the certificate's expiry go. */
  registry?: Registry;
  /** Where refused reviews, failed handlers and the certificate's news go. */
  log: Logger;
}

/**
 * What webhooks may cost by default: bodies of up to 7 MiB (controller-runtime's limit: an object
 * and its old version at etcd's 1.5 MiB each, and the review around them), 16 MiB of bodies held
 * at once, 32 requests at a time. A list read in another version is converted in one review per
 * page (kubectl asks 500 objects a page): a client that lists thousands of Ptemplates in v1beta1
 * without pages can pass 7 MiB and be refused; reading a body of that size costs about twice
 * its size in memory until it is collected.
 */
export const WEBHOOK_LIMITS: Partial<ServerLimits> = {
  maxBodyBytes: 7 * 1024 * 1024,
  maxBufferedBytes: 16 * 1024 * 1024,
  maxConcurrentRequests: 32,
};

/** The admission paths of a plugin, as a webhook configuration names them. */
export function webhookPaths(plugin: Pick<Plugin, "name">): { mutate: string; validate: string } {
  return { mutate: `/mutate/${plugin.name}`, validate: `/validate/${plugin.name}` };
}

/**
 * The webhooks' HTTPS server (see the module doc): admission for the plugins that have it,
 * conversion for the CRDs that need it, on every replica.
 */
export class WebhookServer {
  readonly #options: WebhookServerOptions;
  readonly #server: HttpServer;
  readonly #warnings: WarningThrottle;
  /** The CRDs' version schemas. */
  readonly #schemas: VersionSchemas;
  /**
   * Requests answered (a review came back, Failure included) or refused, by route: its keys are
   * the routes' paths and never a caller's, so there are at most two per route.
   */
  readonly answered = new Map<string, number>();

  /**
   * Routes every plugin's admission and the conversions, and reads the CRDs' schemas; it listens
   * once started.
   */
  constructor(options: WebhookServerOptions) {
    this.#options = options;
    this.#warnings = new WarningThrottle(options.log);
    this.#schemas = new VersionSchemas([
      ...(options.conversions ?? []).flatMap((c) => c.crd ? [c.crd] : []),
      ...options.crds ?? [],
    ]);
    const routes: Route[] = [{
      path: "/convert",
      methods: ["POST"],
      handle: (_, context) => this.#counted("/convert", () => this.#convert(context)),
    }];
    for (const plugin of options.plugins) {
      const paths = webhookPaths(plugin);
      if (plugin.default) {
        routes.push({
          path: paths.mutate,
          methods: ["POST"],
          handle: (_, context) =>
            this.#counted(paths.mutate, () => this.#admit(plugin, "mutate", context)),
        });
      }
      if (plugin.validate) {
        routes.push({
          path: paths.validate,
          methods: ["POST"],
          handle: (_, context) =>
            this.#counted(paths.validate, () => this.#admit(plugin, "validate", context)),
        });
      }
    }
    this.#server = new HttpServer({
      name: "webhooks",
      bind: options.bind,
      routes,
      tls: { certificate: options.certificate, reloadMs: options.reloadMs },
      limits: { ...WEBHOOK_LIMITS, ...options.limits },
      registry: options.registry,
      observe: options.registry && webhookObserver(options.registry, routes.map((r) => r.path)),
      log: options.log,
    });
  }

  /** The public port, once listening. */
  get port(): number | undefined {
    return this.#server.port;
  }

  /** `/readyz` fails while the webhooks are not served (no certificate yet, or not started). */
  checks(): ProbeChecks {
    return { readyz: { webhooks: () => this.problem } };
  }

  /** Why webhooks are not served, or undefined when they are (for `/readyz`). */
  get problem(): string | undefined {
    return this.#server.problem;
  }

  /** Certificates taken after the first. */
  get rotations(): number {
    return this.#server.rotations;
  }

  /** The HTTP server under it: its answers by status and the connections its front closed. */
  get http(): HttpServer {
    return this.#server;
  }

  /**
   * Listens, and serves once a certificate is at hand (looked for again every `reloadMs`); whoever
   * starts it says where, and whether it serves yet (`problem`).
   */
  start(): Promise<void> {
    return this.#server.start();
  }

  /** Stops accepting, lets the requests in flight finish, then closes what is left. */
  stop(): Promise<void> {
    return this.#server.stop();
  }

  /** Takes the certificate now on offer, if it is new. */
  refresh(): Promise<void> {
    return this.#server.refresh();
  }

  async #counted(route: string, answer: () => Promise<unknown>): Promise<Response> {
    // Named by route, never by what a caller sent: its spans, like its counts, stay few.
    const span = operatorTracer().startSpan(`webhook ${route}`, {
      kind: SpanKind.SERVER,
      attributes: { "webhook.route": route },
    });
    try {
      const review = await withSpan(span, answer);
      this.#count(route, "answered");
      const allowed = (review as { response?: { allowed?: unknown } })?.response?.allowed;
      if (typeof allowed === "boolean") span.setAttribute("webhook.allowed", allowed);
      endSpan(span);
      return Response.json(review);
    } catch (error) {
      this.#count(route, "failed");
      endSpan(span, error);
      throw error;
    }
  }

  #count(path: string, outcome: string): void {
    const key = `${path} ${outcome}`;
    this.answered.set(key, (this.answered.get(key) ?? 0) + 1);
  }

  async #convert(context: RequestContext): Promise<unknown> {
    const request = parseConversionReview(await context.body(), context.path);
    return conversionResponse(request, {
      conversions: this.#options.conversions ?? [],
      schemas: this.#schemas,
      warnings: this.#warnings,
      log: this.#options.log,
    });
  }

  async #admit(plugin: Plugin, kind: "mutate" | "validate", context: RequestContext) {
    const review = parseAdmissionReview(await context.body(), context.path);
    const request = admissionRequest(plugin, review, {
      schemas: this.#schemas,
      conversions: this.#options.conversions ?? [],
    });
    const response: Record<string, unknown> = { uid: review.uid, allowed: true };
    const admission = this.#admissionContext(review);
    if (kind === "mutate" && plugin.default && request.object) {
      const before = request.object;
      // A plugin may change the copy it is given in place, or return another object.
      const draft = structuredClone(before);
      const after = await plugin.default(draft, admission) ?? draft;
      const patch = topLevelPatch(before, after);
      if (patch.length) {
        response.patchType = "JSONPatch";
        response.patch = btoa(JSON.stringify(patch));
      }
    }
    if (kind === "validate" && plugin.validate) {
      const verdict = await judgedVerdict(plugin.validate, request, admission);
      if (verdict.warnings?.length) response.warnings = verdict.warnings;
      if (verdict.denied) {
        response.allowed = false;
        response.status = { code: 422, reason: "Invalid", message: verdict.denied };
      }
    }
    return { ...ADMISSION_REVIEW, response };
  }

  #admissionContext(review: AdmissionReviewRequest): AdmissionContext {
    const { client, cache, installed, reviewer, log } = this.#options.context;
    const who = review.userInfo;
    return {
      client,
      cache,
      installed,
      log,
      async requesterMay(verb, resource, object = {}) {
        if (!who || !reviewer) return false;
        const allowed = await reviewer.authorize(who, {
          resourceAttributes: {
            verb,
            group: resource.group,
            resource: resource.plural,
            namespace: resource.namespaced ? object.namespace : undefined,
            name: object.name,
          },
        });
        return allowed === true;
      },
    };
  }
}
