/** `run` (the default command): the operator, from its flags, until SIGTERM. */
import { type KubeClient, MAX_SHARDS, preflight } from "../../kube/mod.ts";
import {
  type BindAddress,
  certificateFromDir,
  DEFAULT_CERT_DIR,
  isLoopback,
  log,
  type Logger,
  Manager,
  type ManagerOptions,
  MAX_CONCURRENCY,
  type OperatorIdentity,
  parseBindAddress,
  setupLogging,
  shutdownSignal,
} from "../../runtime/mod.ts";
import { defineCommand } from "../command.ts";
import { connect } from "../connect.ts";
import { METRICS_ADDRESS, RUN } from "../flag_table.ts";
import { type FlagValuesOf, UsageError } from "../flags.ts";
import { type CatalogEntry, conversionCrdNames, crdsOf } from "../plugin_catalog.ts";
import { isolatedRunners } from "../plugin_isolation.ts";
import { metricsRoles } from "../metrics_roles.ts";
import { webhookNames } from "../webhook_manifests.ts";

type RunValues = FlagValuesOf<typeof RUN>;

/** Checks the flags, connects, says where it runs, and runs the manager until a signal. */
export const runCommand = defineCommand({
  summary: "run the operator (the default command)",
  flags: RUN,
  async run(values, { catalog, operator }) {
    setupLogging({ level: values["log-level"], format: values["log-format"] });
    const logger = log("main");
    const healthBind = bindAddress(values, "health-probe-bind-address");
    const namespaces = watchedNamespaces(values);
    if (values.concurrency < 1 || values.concurrency > MAX_CONCURRENCY) {
      throw new UsageError(
        `--concurrency must be from 1 to ${MAX_CONCURRENCY} workers per plugin, not ${values.concurrency}`,
      );
    }
    for (const flag of ["reconcile-timeout", "plugin-heap-limit"] as const) {
      if (!(values[flag] > 0)) {
        throw new UsageError(`--${flag} must be positive, not ${values[flag]}`);
      }
    }
    const shards = values.shards;
    if (shards !== undefined && (shards < 1 || shards > MAX_SHARDS)) {
      throw new UsageError(`--shards must be from 1 to ${MAX_SHARDS}, not ${shards}`);
    }
    if (shards !== undefined && values["leader-elect"] === false) {
      throw new UsageError(
        "--shards takes the work in shards held on Leases: it cannot go with --leader-elect=false",
      );
    }
    const entries = await catalog(values);
    const client = await connect(values, operator);
    const config = client.transport.config;
    const inCluster = config.source.startsWith("in-cluster");
    try {
      // Before anything starts: reachable, and accepting our credentials? If not, one line says why.
      const serverVersion = await preflight(client);
      logger.info(
        "{operator} {version} running {where} against {server} ({serverVersion}, {source})",
        {
          operator: operator.name,
          version: operator.version,
          where: inCluster ? "in-cluster" : "on a workstation",
          server: config.server,
          serverVersion,
          source: config.source,
        },
      );
    } catch (error) {
      client.close();
      throw error;
    }
    const leaderElect = values["leader-elect"] ?? (inCluster || shards !== undefined);
    const { metricsBind, secureMetrics } = metricsServing(values, inCluster, logger, operator);
    logger.info("plugins: {plugins}; watching {scope}; {work}", {
      plugins: entries.map((e) => e.plugin.name).join(", "),
      scope: namespaces.length ? `namespaces ${namespaces.join(", ")}` : "all namespaces",
      work: shards !== undefined
        ? `the work split among the replicas in ${shards} shard(s)`
        : `leader election ${leaderElect ? "on" : "off"}`,
    });
    const signal = shutdownSignal(logger);
    const manager = new Manager({
      operator,
      client,
      plugins: entries.map((e) => e.plugin),
      namespaces,
      leaderElection: leaderElect && {
        namespace: values["leader-election-namespace"] ?? config.namespace,
        name: values["leader-election-id"],
      },
      shards,
      metricsBind,
      secureMetrics,
      healthBind,
      webhooks: await webhooksFor(values, entries, logger, client, operator),
      concurrency: values.concurrency,
      reconcileTimeoutMs: values["reconcile-timeout"] * 1000,
      runnerFor: isolatedRunners(entries, {
        mode: values["plugin-isolation"] as "none" | "worker",
        heapLimitMb: values["plugin-heap-limit"],
        timeoutMs: values["reconcile-timeout"] * 1000,
        log: log("isolation"),
      }),
    });
    try {
      await manager.run(signal);
    } finally {
      client.close();
    }
    return 0;
  },
});

/** An address flag, or a UsageError that names it. */
function bindAddress(
  values: RunValues,
  flag: "health-probe-bind-address" | "metrics-bind-address" | "webhook-bind-address",
  value = values[flag],
): BindAddress | undefined {
  try {
    return parseBindAddress(value ?? "", `--${flag}`);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** `--namespace`, else the OperatorGroup's target namespaces in WATCH_NAMESPACE ("" means all). */
function watchedNamespaces(values: RunValues): string[] {
  const watched = values.namespace ??
    (Deno.env.get("WATCH_NAMESPACE") ?? "").split(",").map((n) => n.trim()).filter(Boolean);
  for (const namespace of watched) {
    if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(namespace)) {
      throw new UsageError(`--namespace "${namespace}" is not a namespace name (a DNS label)`);
    }
  }
  return watched;
}

/**
 * How /metrics is served, controller-runtime's way: over HTTPS behind TokenReview and
 * SubjectAccessReview by default in a cluster (a self-signed certificate unless
 * `--metrics-cert-dir` gives one); on a workstation plain HTTP on loopback unless
 * `--metrics-secure` asks otherwise.
 */
function metricsServing(
  values: RunValues,
  inCluster: boolean,
  logger: Logger,
  operator: OperatorIdentity,
): Pick<ManagerOptions, "metricsBind" | "secureMetrics"> {
  const secure = values["metrics-secure"] ?? inCluster;
  const certDir = values["metrics-cert-dir"];
  if (certDir !== undefined && !secure) {
    throw new UsageError(
      "--metrics-cert-dir is for HTTPS; it cannot go with --metrics-secure=false",
    );
  }
  const metricsBind = bindAddress(
    values,
    "metrics-bind-address",
    values["metrics-bind-address"] ?? (secure ? METRICS_ADDRESS.secure : METRICS_ADDRESS.plain),
  );
  if (metricsBind && !secure && !isLoopback(metricsBind)) {
    logger.warn(
      "metrics are served over plain HTTP on {address}: anyone who can reach it can read them; " +
        "--metrics-secure serves them to authorized callers only",
      { address: `${metricsBind.hostname}:${metricsBind.port}` },
    );
  }
  const secureMetrics = secure
    ? {
      certificate: certDir ? certificateFromDir(certDir) : undefined,
      readerRole: metricsRoles(operator).reader,
    }
    : undefined;
  return { metricsBind, secureMetrics };
}

/**
 * Webhooks are served when there is a certificate to serve them with: a `--webhook-cert-dir`
 * given (its certificate may come later: `/readyz` waits), or one in the default directory.
 */
async function webhooksFor(
  values: RunValues,
  entries: CatalogEntry[],
  logger: Logger,
  client: KubeClient,
  operator: OperatorIdentity,
): Promise<ManagerOptions["webhooks"]> {
  const bind = bindAddress(values, "webhook-bind-address");
  if (!bind) return undefined;
  const conversions = entries.flatMap((e) => e.conversions ?? []);
  // Admitted objects are checked against their CRDs' schemas (and conversions' own, first).
  const crds = crdsOf(entries);
  if (values["webhook-cert-mode"] === "self-managed") {
    // Only this mode needs the X.509 library: loaded here, not at every start.
    const { selfManagedCertificate } = await import("../../runtime/certificates/mod.ts");
    const namespace = client.transport.config.namespace ?? operator.namespace;
    const service = values["webhook-service"];
    const names = webhookNames(operator);
    return {
      bind,
      conversions,
      crds,
      certificate: selfManagedCertificate({
        client,
        namespace,
        secretName: names.secret,
        managedBy: operator.name,
        hosts: {
          dns: [
            service,
            `${service}.${namespace}`,
            `${service}.${namespace}.svc`,
            `${service}.${namespace}.svc.cluster.local`,
          ],
        },
        webhookConfigurations: [names.configuration],
        crds: conversionCrdNames(entries),
        log: log("webhooks"),
      }),
    };
  }
  const dir = values["webhook-cert-dir"] ?? DEFAULT_CERT_DIR;
  const certificate = certificateFromDir(dir);
  if (!values["webhook-cert-dir"] && !await certificate()) {
    logger.info("webhooks off: no certificate in {dir} (give --webhook-cert-dir)", { dir });
    return undefined;
  }
  return { bind, certificate, conversions, crds };
}
