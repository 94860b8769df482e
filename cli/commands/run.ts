/** `run` (the default command): the operator, from its flags, until SIGTERM. */
import { type KubeClient, preflight } from "../../kube/mod.ts";
import {
  type BindAddress,
  certificateFromDir,
  DEFAULT_CERT_DIR,
  DryRunReport,
  isLoopback,
  log,
  type Logger,
  Manager,
  type ManagerOptions,
  type OperatorIdentity,
  parseBindAddress,
  setupLogging,
  shutdownSignal,
} from "../../runtime/mod.ts";
import { certificateDirAtStart } from "../run/certificate_dirs.ts";
import { defineCommand } from "../command/command.ts";
import { connect } from "../command/connect.ts";
import { rehearse } from "../run/dry_run.ts";
import { type EnvValuesOf, readEnvironment } from "../flags/environment.ts";
import { METRICS_ADDRESS, RUN, RUN_ENVIRONMENT } from "../command/flag_table.ts";
import { type FlagValuesOf, UsageError } from "../flags/flags.ts";
import { type CatalogEntry, conversionCrdNames, crdsOf } from "../plugin_loading/plugin_catalog.ts";
import { isolatedRunners } from "../plugin_loading/plugin_isolation.ts";
import { metricsRoles } from "../manifests/metrics_roles.ts";
import { checkRunFlags } from "../run/run_checks.ts";
import { acrossNamespaces } from "../run/watch_scope.ts";
import { webhookNames } from "../manifests/webhook_manifests.ts";

type RunValues = FlagValuesOf<typeof RUN>;

/**
 * Checks the flags (each by its rule as it is parsed, then together) and the environment,
 * connects, says where it runs, and runs the manager until a signal.
 */
export const runCommand = defineCommand({
  summary: "run the operator (the default command)",
  flags: RUN,
  async run(values, { catalog, operator, given }) {
    setupLogging({ level: values["log-level"], format: values["log-format"] });
    const logger = log("main");
    const env = readEnvironment(RUN_ENVIRONMENT);
    const healthBind = bindAddress(values, "health-probe-bind-address");
    const namespaces = watchedNamespaces(values, env);
    const shards = values.shards;
    const entries = await catalog(values);
    const client = await connect(values, operator, {
      purpose: values["dry-run"] ? "dry run" : undefined,
    });
    const config = client.transport.config;
    const inCluster = config.source.startsWith("in-cluster");
    let webhooks: ManagerOptions["webhooks"];
    let metrics: Pick<ManagerOptions, "metricsBind" | "secureMetrics">;
    try {
      checkRunFlags(values, given, { inCluster });
      // What is on this machine comes first: a certificate that will not load is refused here.
      metrics = await metricsServing(values, inCluster, logger, operator);
      webhooks = await webhooksFor(values, entries, logger, client, operator);
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
    const { metricsBind, secureMetrics } = metrics;
    const plugins = entries.map((e) => e.plugin);
    logger.info("plugins: {plugins}; watching {scope}; {work}", {
      plugins: entries.map((e) => e.plugin.name).join(", "),
      scope: namespaces.length > 10
        ? `${namespaces.length} namespaces (${namespaces.slice(0, 3).join(", ")}, …)`
        : namespaces.length
        ? `namespaces ${namespaces.join(", ")}`
        : "all namespaces",
      work: shards !== undefined
        ? `the work split among the replicas in ${shards} shard(s)`
        : `leader election ${leaderElect ? "on" : "off"}`,
    });
    const signal = shutdownSignal(logger);
    const dryRun = values["dry-run"] ? new DryRunReport(log("dry-run")) : undefined;
    const manager = new Manager({
      operator,
      client,
      plugins,
      namespaces,
      acrossNamespaces: await acrossNamespaces(client, plugins, namespaces, logger),
      dryRun,
      leaderElection: !dryRun && leaderElect && {
        namespace: values["leader-election-namespace"] ?? config.namespace,
        name: values["leader-election-id"],
      },
      shards,
      metricsBind,
      secureMetrics,
      healthBind,
      webhooks: dryRun ? undefined : webhooks,
      metricsReaderRole: metricsRoles(operator).reader,
      visitHistory: values["visit-history"],
      priorityQueue: values["priority-queue"],
      resyncPeriodMs: values["resync-period"] * 1000,
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
      if (dryRun) {
        await rehearse(manager, dryRun, {
          output: values["dry-run-output"] as "text" | "json",
          signal,
        });
      } else await manager.run(signal);
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

/**
 * `--namespace`, else the OperatorGroup's target namespaces in WATCH_NAMESPACE ("" means all);
 * each checked by its rule already, a namespace named twice is watched once.
 */
function watchedNamespaces(
  values: RunValues,
  env: EnvValuesOf<typeof RUN_ENVIRONMENT>,
): string[] {
  return [...new Set(values.namespace ?? env.WATCH_NAMESPACE ?? [])];
}

/**
 * How /metrics is served, controller-runtime's way: over HTTPS behind TokenReview and
 * SubjectAccessReview by default in a cluster (a self-signed certificate unless
 * `--metrics-cert-dir` gives one); on a workstation plain HTTP on loopback unless
 * `--metrics-secure` asks otherwise.
 */
async function metricsServing(
  values: RunValues,
  inCluster: boolean,
  logger: Logger,
  operator: OperatorIdentity,
): Promise<Pick<ManagerOptions, "metricsBind" | "secureMetrics">> {
  const secure = values["metrics-secure"] ?? inCluster;
  const certDir = values["metrics-cert-dir"];
  if (certDir !== undefined) {
    const atStart = await certificateDirAtStart(certDir, "--metrics-cert-dir");
    if (atStart.state === "pending") waitingFor("metrics", atStart.reason, logger);
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
  const given = values["webhook-cert-dir"];
  const dir = given ?? DEFAULT_CERT_DIR;
  const atStart = await certificateDirAtStart(
    dir,
    given ? "--webhook-cert-dir" : "--webhook-cert-dir (not given: its default)",
  );
  if (atStart.state === "pending") {
    if (!given) {
      logger.info("webhooks off: no certificate in {dir} (give --webhook-cert-dir)", { dir });
      return undefined;
    }
    waitingFor("webhooks", atStart.reason, logger);
  }
  return { bind, certificate: certificateFromDir(dir), conversions, crds };
}

/** Says once that a server waits for its certificate, which a mount may still bring. */
function waitingFor(what: string, reason: string, logger: Logger): void {
  logger.warn(
    "{server} wait for their certificate: {reason}; /readyz fails until tls.crt and tls.key " +
      "are there (a Secret mounted, as cert-manager's is) and then they are served",
    { server: what, reason },
  );
}
