/**
 * Serves the plugins' admission (defaulting and validation) and the CRDs' conversion over HTTPS,
 * on every replica: `POST /mutate/<plugin>`, `/validate/<plugin>` (AdmissionReview v1) and
 * `/convert` (ConversionReview v1), on an HttpServer (bounded connections, bodies and requests;
 * a new certificate taken without a pause). A review is checked before use (`webhook_review.ts`):
 * the right review for the path, the plugin's kind, objects of the shape their version's schema
 * gives; a conversion refuses what it does not understand rather than invent or drop a field.
 * The callers are not authenticated (the API server presents no credentials by default): what a
 * plugin may look at for them is what the review's requester may read (`requesterMay`).
 */
import type { KubeClient } from "../../kube/client.ts";
import { endSpan, operatorTracer, SpanKind, withSpan } from "../../util/tracer.ts";
import type { KubeObject, Unstructured } from "../../kube/object.ts";
import type { OpenApiSchema } from "../../kube/custom_resource_definition.ts";
import type { Resource } from "../../kube/resource.ts";
import {
  type AccessReviewer,
  type BindAddress,
  HttpError,
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
import type { AdmissionContext, AdmissionRequest, Plugin } from "../plugin/mod.ts";
import { objectProblems } from "./schema_check.ts";
import { webhookObserver } from "./webhook_metrics.ts";
import { addedProblems, judgedVerdict } from "./change_judgement.ts";
import type { CacheReader } from "../cache/mod.ts";
import {
  ADMISSION_REVIEW,
  type AdmissionReviewRequest,
  CONVERSION_REVIEW,
  groupVersion,
  parseAdmissionReview,
  parseConversionReview,
} from "./webhook_review.ts";

export type { ServingCertificate };

/** How one CRD's objects change between its versions. */
export interface Conversion {
  /** The API group of the kind converted. */
  group: string;
  /** The kind converted. */
  kind: string;
  /**
   * The CRD with every version it serves: each object is checked against its version's schema
   * before it is converted (an unknown field, a spec that is not an object: refused) and the
   * result against the target version's. Without it, `convert` alone decides.
   */
  crd?: Unstructured;
  /**
   * The object as `apiVersion` (`group/version`). Throws a ConversionError, in words the person
   * reading the API server's answer can act on, for anything it does not understand.
   */
  convert(object: Unstructured, apiVersion: string): Unstructured;
}

/** A conversion that cannot be done, said so that the API server can pass it on as it is. */
export class ConversionError extends Error {
  /** Always `ConversionError`. */
  override readonly name = "ConversionError";
}

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
  /** Schemas by `group/version kind`. */
  readonly #schemas = new Map<string, OpenApiSchema>();
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
    const crds = [
      ...(options.conversions ?? []).flatMap((c) => c.crd ? [c.crd] : []),
      ...options.crds ?? [],
    ];
    for (const crd of crds) {
      const spec = crd.spec as {
        group: string;
        names: { kind: string };
        versions: { name: string; schema?: { openAPIV3Schema: OpenApiSchema } }[];
      };
      for (const version of spec.versions) {
        const key = `${spec.group}/${version.name} ${spec.names.kind}`;
        if (version.schema && !this.#schemas.has(key)) {
          this.#schemas.set(key, version.schema.openAPIV3Schema);
        }
      }
    }
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

  /** Converts every object, or none: one that cannot be converted fails the review, in words. */
  async #convert(context: RequestContext): Promise<unknown> {
    const request = parseConversionReview(await context.body(), context.path);
    const response = (result: Record<string, unknown>, objects: Unstructured[] = []) => ({
      ...CONVERSION_REVIEW,
      response: { uid: request.uid, convertedObjects: objects, result },
    });
    const [group] = request.desiredAPIVersion.split("/");
    const converted: Unstructured[] = [];
    for (const [index, object] of request.objects.entries()) {
      const failure = this.#convertOne(
        object,
        group,
        request.desiredAPIVersion,
        (out) => converted.push(out),
      );
      if (failure) {
        const name = typeof object.metadata?.name === "string" ? ` (${object.metadata.name})` : "";
        return response({ status: "Failure", message: `objects[${index}]${name}: ${failure}` });
      }
    }
    return response({ status: "Success" }, converted);
  }

  /** Converts one object; returns why not, if it cannot. */
  #convertOne(
    object: Unstructured,
    group: string,
    to: string,
    done: (out: Unstructured) => void,
  ): string | undefined {
    const from = groupVersion(object);
    const kind = typeof object.kind === "string" ? object.kind : "";
    if (from.group !== group) {
      return `cannot convert ${printableVersion(object)} to another group (${to})`;
    }
    const conversion = this.#options.conversions?.find((c) => c.group === group && c.kind === kind);
    if (!conversion) return `no conversion is served for ${printableVersion(object)} ${kind}`;
    // The shape only, before and after: an object stored before a bound existed still converts.
    const problems = this.#schemaProblems(object, `${from.group}/${from.version}`, kind, false);
    if (problems) return problems;
    let out: Unstructured;
    try {
      out = conversion.convert(object, to);
    } catch (error) {
      if (error instanceof ConversionError) return error.message;
      this.#warnings.warn("conversion", "converting a {kind} failed: {error}", {
        kind,
        error: (error as Error)?.message ?? String(error),
      });
      return "the conversion failed; the operator's log says more";
    }
    const after = this.#schemaProblems(out, to, kind, false);
    if (after) {
      this.#options.log.error(
        "converting a {kind} to {to} made an object its schema refuses: {after}",
        {
          kind,
          to,
          after,
        },
      );
      return `the converted object does not fit ${to}: ${after}`;
    }
    done(out);
    return undefined;
  }

  /**
   * Where an object does not fit its version's schema (its shape, and with `bounds` its bounds
   * too), or undefined (also when none is known).
   */
  #schemaProblems(
    object: Unstructured,
    apiVersion: string,
    kind: string,
    bounds: boolean,
    old?: Unstructured,
  ): string | undefined {
    const key = `${apiVersion} ${kind}`;
    const schema = this.#schemas.get(key);
    if (!schema) {
      const served = [...this.#schemas.keys()].some((k) =>
        k.endsWith(` ${kind}`) &&
        k.startsWith(`${apiVersion.split("/")[0]}/`)
      );
      return served ? `${kind} is not served as ${apiVersion}` : undefined;
    }
    let problems = objectProblems(object, schema, { bounds });
    // Judged as a change: what the stored object already had is not held against an update.
    if (old && problems.length) problems = addedProblems(problems, objectProblems(old, schema));
    return problems.length ? problems.join("; ") : undefined;
  }

  async #admit(plugin: Plugin, kind: "mutate" | "validate", context: RequestContext) {
    const review = parseAdmissionReview(await context.body(), context.path);
    const request = this.#checked(plugin, review);
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

  /**
   * The review as the plugin sees it: about the plugin's kind, in the namespace it says, each
   * object fitting its version's schema and converted to the plugin's version. A 400 otherwise.
   */
  #checked(plugin: Plugin, review: AdmissionReviewRequest): AdmissionRequest {
    const kind = plugin.for;
    if (review.resource.group !== kind.group || review.resource.resource !== kind.plural) {
      throw new HttpError(
        400,
        `this webhook admits ${kind.plural}.${kind.group || "core"}, not ` +
          `${review.resource.resource}.${review.resource.group || "core"}`,
      );
    }
    if (kind.namespaced !== Boolean(review.namespace)) {
      throw new HttpError(
        400,
        `${kind.kind} is ${
          kind.namespaced
            ? "namespaced: the request needs a namespace"
            : "cluster-scoped: the request has a namespace"
        }`,
      );
    }
    // The stored object is checked for its shape only, and the new one for what it adds to it.
    const inPluginVersion = (
      object: Unstructured | undefined,
      field: string,
      old?: Unstructured,
    ) => {
      if (!object) return undefined;
      const { group, version } = groupVersion(object);
      if (group !== kind.group || object.kind !== kind.kind) {
        throw new HttpError(400, `${field} must be a ${kind.kind} of ${kind.group || "core"}`);
      }
      const namespace = object.metadata?.namespace;
      if (namespace !== undefined && namespace !== review.namespace) {
        throw new HttpError(400, `${field}.metadata.namespace is not the request's namespace`);
      }
      const stored = field === "request.oldObject";
      const problems = this.#schemaProblems(
        object,
        `${group}/${version}`,
        kind.kind,
        !stored,
        old,
      );
      if (problems) throw new HttpError(400, `${field}: ${problems}`);
      if (version === kind.version) return object;
      const conversion = this.#options.conversions?.find((c) =>
        c.group === kind.group && c.kind === kind.kind
      );
      if (!conversion) {
        throw new HttpError(400, `${field} is ${kind.group}/${version}, not ${kind.version}`);
      }
      try {
        return conversion.convert(object, `${kind.group}/${kind.version}`);
      } catch (error) {
        if (error instanceof ConversionError) {
          throw new HttpError(400, `${field}: ${error.message}`);
        }
        throw error;
      }
    };
    return {
      operation: review.operation,
      namespace: review.namespace,
      name: review.name,
      object: inPluginVersion(review.object, "request.object", review.oldObject),
      oldObject: inPluginVersion(review.oldObject, "request.oldObject"),
      dryRun: review.dryRun,
      username: review.userInfo?.username,
      userInfo: review.userInfo,
    };
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

function printableVersion(object: Unstructured): string {
  const apiVersion = typeof object.apiVersion === "string" ? object.apiVersion : "";
  return JSON.stringify(apiVersion.length > 64 ? `${apiVersion.slice(0, 64)}…` : apiVersion);
}

/** JSON Patch operations that turn `before` into `after`, field by field under the top level. */
function topLevelPatch(before: KubeObject, after: KubeObject): unknown[] {
  const ops: unknown[] = [];
  const a = before as Record<string, unknown>;
  const b = after as Record<string, unknown>;
  const escape = (key: string) => key.replaceAll("~", "~0").replaceAll("/", "~1");
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (JSON.stringify(a[key]) === JSON.stringify(b[key])) continue;
    if (!Object.hasOwn(b, key)) ops.push({ op: "remove", path: `/${escape(key)}` });
    else {
      ops.push({
        op: Object.hasOwn(a, key) ? "replace" : "add",
        path: `/${escape(key)}`,
        value: b[key],
      });
    }
  }
  return ops;
}
