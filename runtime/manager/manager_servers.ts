/**
 * The manager's HTTP servers: `/metrics` (with `/debug/explain`, and over HTTPS when asked) and the
 * probes, on one plain-HTTP port when they share it, else one each; each says where it listens
 * and, while it cannot serve yet, why not.
 */
import type { KubeClient } from "../../kube/client.ts";
import { StartupError } from "../../util/startup_error.ts";
import {
  AccessReviewer,
  type BindAddress,
  HttpServer,
  type HttpServerOptions,
  log as rootLog,
  type Logger,
  metricsRoute,
  type Probes,
  type Registry,
  type Route,
  selfSignedCertificate,
} from "../observe/mod.ts";
import { type Controller, explainRoute } from "../reconcile/mod.ts";
import type { KubeObject } from "../../kube/object.ts";
import type { ManagerEndpoints, ManagerOptions } from "./manager_options.ts";

/** What the servers serve from. */
export interface ManagerServersOptions extends
  Pick<
    ManagerOptions,
    "metricsBind" | "healthBind" | "secureMetrics" | "serverLimits" | "metricsReaderRole"
  > {
  /** Where the metrics are read from (`/metrics`). */
  registry: Registry;
  /** What `/debug/explain` reads. */
  controllers: Controller<KubeObject>[];
  /** Where the bound ports are written. */
  endpoints: ManagerEndpoints;
  /** Where each server says where it listens, or why it does not serve yet. */
  log: Logger;
}

/** The servers one manager runs, stopped together. */
export class ManagerServers {
  readonly #servers: { stop(): Promise<void> }[] = [];

  /** Servers are started by `serve`; nothing listens before. */
  constructor(private readonly options: ManagerServersOptions) {}

  /**
   * Starts a server and says where it listens, and, when it cannot serve yet (an HTTPS server
   * whose certificate is still to come), why not. Stopped with the others.
   */
  async listen(
    what: string,
    server: { start(): Promise<void>; stop(): Promise<void>; port?: number; problem?: string },
    bind: BindAddress,
    https?: boolean,
  ): Promise<void> {
    this.#servers.push(server);
    await server.start();
    const { problem } = server;
    this.options.log.info(
      problem
        ? "listening for {what} on {address}, not serving yet: {problem}"
        : "serving {what} on {address}",
      {
        what,
        address: `${bind.hostname}:${server.port}`,
        port: server.port,
        ...(https === undefined ? {} : { https }),
        ...(problem ? { problem } : {}),
      },
    );
  }

  /**
   * Starts the metrics and probe servers. Metrics over HTTPS cannot share the probes' port (the
   * kubelet probes in plain HTTP): a StartupError names both flags.
   */
  async serve(probes: Probes, callerClient: (purpose: string) => KubeClient): Promise<void> {
    const { metricsBind, healthBind, secureMetrics, serverLimits, registry, endpoints } =
      this.options;
    const server = (
      name: string,
      bind: BindAddress,
      routes: Route[],
      tls?: HttpServerOptions["tls"],
    ) =>
      new HttpServer({
        name,
        bind,
        routes,
        tls,
        limits: serverLimits,
        registry,
        log: rootLog(name),
      });
    const shared = metricsBind && healthBind && metricsBind.port !== 0 &&
      metricsBind.port === healthBind.port;
    if (shared && secureMetrics) {
      throw new StartupError(
        `${metricsBind.flag ?? "the metrics address"} and ${
          healthBind.flag ?? "the probes address"
        } are the same port, but metrics are served over HTTPS and probes over HTTP: give ` +
          "them different ports",
      );
    }
    if (metricsBind) {
      // Whoever may read /metrics may ask for a timeline: over HTTPS, and on loopback too.
      const reviewer = new AccessReviewer(callerClient("metrics-auth"), {
        log: rootLog("metrics"),
      });
      const readerRole = secureMetrics?.readerRole ?? this.options.metricsReaderRole;
      const routes = [
        metricsRoute(registry, secureMetrics ? reviewer : undefined, { readerRole }),
        explainRoute(this.options.controllers, reviewer, { readerRole }),
        ...shared ? probes.routes() : [],
      ];
      const tls = secureMetrics && {
        certificate: secureMetrics.certificate ??
          selfSignedCertificate({
            dns: [hostnameOr("localhost"), "localhost"],
            ips: ["127.0.0.1"],
          }),
      };
      const http = server("metrics", metricsBind, routes, tls || undefined);
      // Over HTTPS, not ready while its certificate is not at hand (a mount may bring it later).
      if (tls) probes.register({ readyz: { metrics: () => http.problem } });
      await this.listen("metrics", http, metricsBind, Boolean(secureMetrics));
      endpoints.metricsPort = http.port;
      if (shared) {
        endpoints.healthPort = http.port;
        this.options.log.info("serving {what} on {address}", {
          what: "probes",
          address: `${healthBind.hostname}:${http.port}`,
          port: http.port,
        });
      }
    }
    if (healthBind && !shared) {
      const http = server("probes", healthBind, probes.routes());
      await this.listen("probes", http, healthBind);
      endpoints.healthPort = http.port;
    }
  }

  /** Stops every server started. */
  async stop(): Promise<void> {
    await Promise.all(this.#servers.map((s) => s.stop()));
  }
}

function hostnameOr(fallback: string): string {
  try {
    return Deno.hostname();
  } catch {
    return fallback;
  }
}
