/** The ptemplate-operator command line: run the operator, print or install its CRDs, say its version. */
import { stringify } from "yaml";
import denoJson from "./deno.json" with { type: "json" };
import {
  CUSTOM_RESOURCE_DEFINITION,
  emptyValuePolicy,
  isApiError,
  KubeClient,
  KubeconfigError,
  loadClusterConfig,
  policyResource,
  preflight,
  storedVersion,
  type Unstructured,
} from "./kube/mod.ts";
import {
  certificateFromDir,
  DEFAULT_CERT_DIR,
  isLoopback,
  log,
  Manager,
  MAX_CONCURRENCY,
  parseBindAddress,
  setupLogging,
  shutdownSignal,
} from "./runtime/mod.ts";
import {
  describeFlags,
  type FlagSpecs,
  type FlagValuesOf,
  parseFlags,
  UsageError,
} from "./cli/flags.ts";
import {
  builtInCatalog,
  type CatalogEntry,
  conversionCrdNames,
  crdsOf,
  loadPluginModules,
  selectPlugins,
  withLoadedPlugins,
} from "./cli/plugin_catalog.ts";

export type { CatalogEntry };
import { rbacManifests, rbacYaml } from "./cli/rbac_manifests.ts";
import { type BundleFile, olmBundle } from "./cli/olm_bundle.ts";
import { bundleChecks } from "./cli/olm_checks.ts";
import { WEBHOOK_NAMES } from "./cli/webhook_manifests.ts";

export const VERSION: string = denoJson.version;

/** Client-side rate limit defaults: high enough not to slow a large start-up, low enough to bound a loop. */
const DEFAULT_QPS = 500;
const DEFAULT_BURST = 1000;
/** Workers per plugin: reconciles mostly wait on the API server, so a few in flight keep it busy. */
const DEFAULT_CONCURRENCY = 8;

const CONNECTION = {
  kubeconfig: {
    kind: "string",
    placeholder: "FILE",
    help: "kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config)",
  },
  context: {
    kind: "string",
    placeholder: "NAME",
    help: "kubeconfig context (default: its current-context)",
  },
  "kube-api-qps": {
    kind: "number",
    placeholder: "QPS",
    help: `requests per second to the API server, sustained (default ${DEFAULT_QPS})`,
  },
  "kube-api-burst": {
    kind: "integer",
    placeholder: "N",
    help: `requests that may go at once after a quiet spell (default ${DEFAULT_BURST})`,
  },
} as const satisfies FlagSpecs;

const PLUGINS = {
  plugins: {
    kind: "list",
    placeholder: "LIST",
    help: "plugins to run: the exact set (a,b) or edits to the default (-a,+b)",
  },
  plugin: {
    kind: "list",
    placeholder: "MODULE",
    help: "run the plugins a module exports, and only those unless --plugins adds ours " +
      "(+kmm-module); under `deno run`; repeatable",
  },
} as const satisfies FlagSpecs;

const RUN = {
  ...CONNECTION,
  namespace: {
    kind: "list",
    placeholder: "NS",
    help: "watch only this namespace (repeatable; default all)",
  },
  "leader-elect": {
    kind: "boolean",
    help: "elect a leader first (default: on in-cluster, off on a workstation)",
  },
  "leader-election-namespace": {
    kind: "string",
    placeholder: "NS",
    help: "namespace of the Lease (default: the pod's, or the kubeconfig context's)",
  },
  "leader-election-id": {
    kind: "string",
    placeholder: "NAME",
    help: "name of the Lease (default ptemplate-operator.pt.example.com)",
  },
  "metrics-bind-address": {
    kind: "string",
    placeholder: "ADDR",
    help: "where /metrics listens, host:port or :port; 0 disables (default :8443 with " +
      "--metrics-secure, else 127.0.0.1:8080)",
  },
  "metrics-secure": {
    kind: "boolean",
    help: "serve /metrics over HTTPS, only to callers the API server authorizes (TokenReview and " +
      "SubjectAccessReview on get /metrics) (default: on in-cluster, off on a workstation)",
  },
  "metrics-cert-dir": {
    kind: "string",
    placeholder: "DIR",
    help: "tls.crt and tls.key for /metrics over HTTPS, reloaded when they change (default: a " +
      "self-signed certificate made at start)",
  },
  "health-probe-bind-address": {
    kind: "string",
    placeholder: "ADDR",
    help: "where /healthz and /readyz listen; 0 disables (default :8081)",
  },
  "log-level": {
    kind: "string",
    placeholder: "LEVEL",
    choices: ["debug", "info", "warning", "error"],
    help: "debug, info, warning or error (default info)",
  },
  "log-format": {
    kind: "string",
    placeholder: "FORMAT",
    choices: ["text", "json", "auto"],
    help: "text, json, or auto: text on a terminal, JSON otherwise (default auto)",
  },
  "webhook-bind-address": {
    kind: "string",
    placeholder: "ADDR",
    help: "where admission and conversion webhooks listen (HTTPS); 0 disables (default :9443)",
  },
  "webhook-cert-dir": {
    kind: "string",
    placeholder: "DIR",
    help:
      `tls.crt and tls.key for the webhooks, reloaded when they change (default ${DEFAULT_CERT_DIR}; ` +
      "webhooks are off when it has none and was not given)",
  },
  "webhook-cert-mode": {
    kind: "string",
    placeholder: "MODE",
    choices: ["dir", "self-managed"],
    help: "dir: certificates from --webhook-cert-dir (cert-manager); self-managed: the operator " +
      "keeps them in a Secret and the caBundles up to date (default dir)",
  },
  "webhook-service": {
    kind: "string",
    placeholder: "NAME",
    help: "the Service the API server calls the webhooks by, in the operator's namespace " +
      `(self-managed; default ${WEBHOOK_NAMES.service})`,
  },
  concurrency: {
    kind: "integer",
    placeholder: "N",
    help: `workers per plugin, 1 to ${MAX_CONCURRENCY} (default ${DEFAULT_CONCURRENCY})`,
  },
  ...PLUGINS,
} as const satisfies FlagSpecs;

const RBAC = {
  namespace: {
    kind: "list",
    placeholder: "NS",
    help: "grant in this namespace only, with a Role (repeatable; default: a ClusterRole)",
  },
  webhooks: {
    kind: "boolean",
    help: "with what the plugins' admission reads (when their webhooks are served)",
  },
  ...PLUGINS,
} as const satisfies FlagSpecs;
const INSTALL = { ...CONNECTION, ...PLUGINS } as const satisfies FlagSpecs;
const UNINSTALL = {
  ...INSTALL,
  yes: { kind: "boolean", help: "delete even when objects of the kinds exist" },
} as const satisfies FlagSpecs;

const BUNDLE = {
  version: {
    kind: "string",
    placeholder: "X.Y.Z",
    help: `the bundle's version (default ${VERSION})`,
  },
  image: {
    kind: "string",
    placeholder: "IMAGE",
    help:
      "the operator image, by digest ideally (default ghcr.io/ptemplate/ptemplate-operator:v<version>)",
  },
  "bundle-image": {
    kind: "string",
    placeholder: "IMAGE",
    help:
      "the bundle image, for the catalog (default ghcr.io/ptemplate/ptemplate-operator-bundle:v<version>)",
  },
  replaces: { kind: "string", placeholder: "X.Y.Z", help: "the version this one upgrades" },
  output: {
    kind: "string",
    placeholder: "DIR",
    help: "where to write bundle/, bundle.Dockerfile, catalog/ (default .)",
  },
  ...PLUGINS,
} as const satisfies FlagSpecs;
const { output: _written, ...BUNDLE_CONTENT } = BUNDLE;
const SCORECARD = {
  bundle: {
    kind: "string",
    placeholder: "DIR",
    help: "check this bundle folder (default: the bundle `bundle` would write now)",
  },
  ...BUNDLE_CONTENT,
} as const satisfies FlagSpecs;

const COMMANDS: Record<string, { summary: string; flags: FlagSpecs }> = {
  run: { summary: "run the operator (the default command)", flags: RUN },
  crds: { summary: "print the CRDs of the enabled plugins as YAML", flags: PLUGINS },
  rbac: {
    summary: "print the RBAC the enabled plugins need (a ClusterRole, or Roles with --namespace)",
    flags: RBAC,
  },
  install: { summary: "install (server-side apply) the CRDs into the cluster", flags: INSTALL },
  uninstall: {
    summary: "delete the CRDs from the cluster, and with them every object of their kinds",
    flags: UNINSTALL,
  },
  bundle: {
    summary:
      "write the OLM bundle and file-based catalog (needs write permission: deno task bundle)",
    flags: BUNDLE,
  },
  scorecard: {
    summary: "run operator-sdk's best-practice checks on the OLM bundle; exits 1 on a failure",
    flags: SCORECARD,
  },
  version: { summary: "print the version", flags: {} },
};

function help(command?: string): string {
  if (command && COMMANDS[command]) {
    return `ptemplate-operator ${command}: ${COMMANDS[command].summary}\n\nFlags:\n${
      describeFlags(COMMANDS[command].flags) || "  (none)"
    }\n`;
  }
  return `ptemplate-operator ${VERSION}: a Kubernetes operator for Ptemplate resources

Usage: ptemplate-operator [command] [flags]

Commands:
${Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}`).join("\n")}

Run flags:
${describeFlags(RUN)}

Examples:
  ptemplate-operator install                        # add the Ptemplate CRD to the current cluster
  ptemplate-operator --kubeconfig ~/.kube/config    # run against it from a workstation
  ptemplate-operator --namespace demo --log-format text --leader-elect
  ptemplate-operator crds > crds.yaml               # review the CRDs before installing them
  ptemplate-operator rbac --plugins +guestbook      # the RBAC those plugins need
  ptemplate-operator --plugins -kmm-module           # run without the KMM Module plugin
  ptemplate-operator run --help                     # flags of one command
`;
}

/** The plugins this binary carries: ours, or an own binary's (see `main`). */
let carried: () => CatalogEntry[] = builtInCatalog;

async function catalogFor(values: FlagValuesOf<typeof PLUGINS>) {
  const loaded = await loadPluginModules(values.plugin ?? []);
  return selectPlugins(withLoadedPlugins(carried(), loaded), values.plugins);
}

async function connect(values: FlagValuesOf<typeof CONNECTION>): Promise<KubeClient> {
  const qps = values["kube-api-qps"] ?? DEFAULT_QPS;
  const burst = values["kube-api-burst"] ?? DEFAULT_BURST;
  if (!(qps > 0)) throw new UsageError(`--kube-api-qps must be above 0, not ${qps}`);
  if (burst < 1) throw new UsageError(`--kube-api-burst must be at least 1, not ${burst}`);
  const config = await loadClusterConfig({
    kubeconfig: values.kubeconfig,
    context: values.context,
  });
  return new KubeClient(config, {
    userAgent: `ptemplate-operator/${VERSION}`,
    rateLimit: { qps, burst },
  });
}

async function run(values: FlagValuesOf<typeof RUN>): Promise<void> {
  setupLogging({
    level: values["log-level"] ?? "info",
    format: values["log-format"] ?? "auto",
  });
  const logger = log("main");
  const bind = (flag: "health-probe-bind-address", fallback: string) => {
    try {
      return parseBindAddress(values[flag] ?? fallback, `--${flag}`);
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
  };
  const healthBind = bind("health-probe-bind-address", ":8081");
  // OLM passes an OperatorGroup's target namespaces in WATCH_NAMESPACE ("" means all).
  const watched = values.namespace ??
    (Deno.env.get("WATCH_NAMESPACE") ?? "").split(",").map((n) => n.trim()).filter(Boolean);
  for (const namespace of watched) {
    if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(namespace)) {
      throw new UsageError(`--namespace "${namespace}" is not a namespace name (a DNS label)`);
    }
  }
  const concurrency = values.concurrency ?? DEFAULT_CONCURRENCY;
  if (concurrency < 1 || concurrency > MAX_CONCURRENCY) {
    throw new UsageError(
      `--concurrency must be from 1 to ${MAX_CONCURRENCY} workers per plugin, not ${concurrency}`,
    );
  }
  const entries = await catalogFor(values);
  const client = await connect(values);
  const config = client.transport.config;
  const inCluster = config.source.startsWith("in-cluster");
  try {
    // Before anything starts: reachable, and accepting our credentials? If not, one line says why.
    const serverVersion = await preflight(client);
    logger.info(
      "ptemplate-operator {version} running {where} against {server} ({serverVersion}, {source})",
      {
        version: VERSION,
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
  const leaderElect = values["leader-elect"] ?? inCluster;
  const { metricsBind, secureMetrics } = metricsServing(values, inCluster, logger);
  const namespaces = watched;
  logger.info("plugins: {plugins}; watching {scope}; leader election {le}", {
    plugins: entries.map((e) => e.plugin.name).join(", "),
    scope: namespaces.length ? `namespaces ${namespaces.join(", ")}` : "all namespaces",
    le: leaderElect ? "on" : "off",
  });
  const signal = shutdownSignal(logger);
  const manager = new Manager({
    client,
    plugins: entries.map((e) => e.plugin),
    namespaces,
    leaderElection: leaderElect && {
      namespace: values["leader-election-namespace"] ?? config.namespace,
      name: values["leader-election-id"] ??
        "ptemplate-operator.pt.example.com",
    },
    metricsBind,
    secureMetrics,
    healthBind,
    webhooks: await webhooksFor(values, entries, logger, { client, namespace: config.namespace }),
    concurrency,
  });
  try {
    await manager.run(signal);
  } finally {
    client.close();
  }
}

/**
 * How /metrics is served, controller-runtime's way: over HTTPS behind TokenReview and
 * SubjectAccessReview by default in a cluster (`:8443`, a self-signed certificate unless
 * `--metrics-cert-dir` gives one); on a workstation plain HTTP on loopback (`127.0.0.1:8080`)
 * unless `--metrics-secure` asks otherwise.
 */
function metricsServing(
  values: FlagValuesOf<typeof RUN>,
  inCluster: boolean,
  logger: ReturnType<typeof log>,
) {
  const secure = values["metrics-secure"] ?? inCluster;
  const certDir = values["metrics-cert-dir"];
  if (certDir !== undefined && !secure) {
    throw new UsageError(
      "--metrics-cert-dir is for HTTPS; it cannot go with --metrics-secure=false",
    );
  }
  let metricsBind;
  try {
    metricsBind = parseBindAddress(
      values["metrics-bind-address"] ?? (secure ? ":8443" : "127.0.0.1:8080"),
      "--metrics-bind-address",
    );
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (metricsBind && !secure && !isLoopback(metricsBind)) {
    logger.warn(
      "metrics are served over plain HTTP on {address}: anyone who can reach it can read them; " +
        "--metrics-secure serves them to authorized callers only",
      { address: `${metricsBind.hostname}:${metricsBind.port}` },
    );
  }
  const secureMetrics = secure
    ? { certificate: certDir ? certificateFromDir(certDir) : undefined }
    : undefined;
  return { metricsBind, secureMetrics };
}

/**
 * Webhooks are served when there is a certificate to serve them with: a `--webhook-cert-dir`
 * given (its certificate may come later: `/readyz` waits), or one in the default directory.
 */
async function webhooksFor(
  values: FlagValuesOf<typeof RUN>,
  entries: CatalogEntry[],
  logger: ReturnType<typeof log>,
  cluster: { client: KubeClient; namespace?: string },
) {
  let bind;
  try {
    bind = parseBindAddress(values["webhook-bind-address"] ?? ":9443", "--webhook-bind-address");
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (!bind) return undefined;
  const conversions = entries.flatMap((e) => e.conversions ?? []);
  // Admitted objects are checked against their CRDs' schemas (and conversions' own, first).
  const crds = crdsOf(entries);
  if (values["webhook-cert-mode"] === "self-managed") {
    // Only this mode needs the X.509 library: loaded here, not at every start.
    const { selfManagedCertificate } = await import("./runtime/certificates/mod.ts");
    const namespace = cluster.namespace ?? "ptemplate-operator-system";
    const service = values["webhook-service"] ?? WEBHOOK_NAMES.service;
    return {
      bind,
      conversions,
      crds,
      certificate: selfManagedCertificate({
        client: cluster.client,
        namespace,
        secretName: WEBHOOK_NAMES.secret,
        hosts: {
          dns: [
            service,
            `${service}.${namespace}`,
            `${service}.${namespace}.svc`,
            `${service}.${namespace}.svc.cluster.local`,
          ],
        },
        webhookConfigurations: [WEBHOOK_NAMES.configuration],
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

async function install(values: FlagValuesOf<typeof INSTALL>): Promise<void> {
  const crds = crdsOf(await catalogFor(values));
  const client = await connect(values);
  try {
    await preflight(client);
    for (const crd of crds) {
      const name = crd.metadata!.name!;
      await client.apply(CUSTOM_RESOURCE_DEFINITION, crd, {
        fieldManager: "ptemplate-operator",
        force: true,
      });
      for (let i = 0;; i++) {
        const current = await client.get(CUSTOM_RESOURCE_DEFINITION, name);
        const conditions = (current.status as { conditions?: { type: string; status: string }[] })
          ?.conditions;
        if (conditions?.some((c) => c.type === "Established" && c.status === "True")) break;
        if (i > 100) throw new Error(`CustomResourceDefinition ${name} did not become Established`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      console.log(`installed CustomResourceDefinition ${name}`);
      // Refuses empty map values under client-side kubectl apply (kube/empty_value_policy.ts).
      for (const policy of emptyValuePolicy(crd)) {
        await client.apply(policyResource(policy)!, policy, {
          fieldManager: "ptemplate-operator",
          force: true,
        });
        console.log(`installed ${policy.kind} ${policy.metadata!.name}`);
      }
    }
  } finally {
    client.close();
  }
}

/**
 * Deletes the CRDs, and with them every object of their kinds; says what that is first, and
 * deletes nothing that exists without --yes.
 */
async function uninstall(values: FlagValuesOf<typeof UNINSTALL>): Promise<void> {
  const crds = crdsOf(await catalogFor(values));
  const client = await connect(values);
  try {
    await preflight(client);
    const present: { name: string; kind: string; count: number }[] = [];
    for (const crd of crds) {
      const name = crd.metadata!.name!;
      let installed: Unstructured;
      try {
        installed = await client.get(CUSTOM_RESOURCE_DEFINITION, name);
      } catch (error) {
        if (!isApiError(error, 404)) throw error;
        console.log(`CustomResourceDefinition ${name} is not installed`);
        continue;
      }
      // The cluster's CRD, not ours: it may store another version (deploy/webhooks' has two).
      const spec = installed.spec as { group: string; names: { kind: string; plural: string } };
      const resource = {
        group: spec.group,
        version: storedVersion(installed).name,
        kind: spec.names.kind,
        plural: spec.names.plural,
        namespaced: (installed.spec as { scope: string }).scope === "Namespaced",
      };
      const { items } = await client.listAll(resource);
      present.push({ name, kind: spec.names.kind, count: items.length });
    }
    const objects = present.reduce((sum, p) => sum + p.count, 0);
    for (const { name, kind, count } of present) {
      console.log(`CustomResourceDefinition ${name}: ${count} ${kind} object(s) would be deleted`);
    }
    if (objects > 0 && !values.yes) {
      throw new UsageError(
        `uninstall would delete ${objects} object(s) with their CRDs; run again with --yes ` +
          `if that is what you want`,
      );
    }
    for (const { name } of present) {
      await client.delete(CUSTOM_RESOURCE_DEFINITION, name);
      console.log(`deleted CustomResourceDefinition ${name}`);
    }
    for (const crd of crds) {
      for (const policy of emptyValuePolicy(crd).reverse()) {
        await client.delete(policyResource(policy)!, policy.metadata!.name!).catch((error) => {
          if (!isApiError(error, 404)) throw error;
        });
      }
    }
  } finally {
    client.close();
  }
}

async function bundleFor(values: FlagValuesOf<typeof BUNDLE>) {
  const version = values.version ?? VERSION;
  return await olmBundle({
    version,
    image: values.image ?? `ghcr.io/ptemplate/ptemplate-operator:v${version}`,
    bundleImage: values["bundle-image"] ??
      `ghcr.io/ptemplate/ptemplate-operator-bundle:v${version}`,
    replaces: values.replaces,
    catalog: await catalogFor(values),
  });
}

/** A bundle folder as written (`manifests/`, `metadata/`), for the checks. */
async function readBundle(dir: string): Promise<BundleFile[]> {
  const files: BundleFile[] = [];
  for (const folder of ["manifests", "metadata"]) {
    for await (const entry of Deno.readDir(`${dir}/${folder}`)) {
      if (!entry.isFile) continue;
      const text = await Deno.readTextFile(`${dir}/${folder}/${entry.name}`);
      files.push({ path: `bundle/${folder}/${entry.name}`, text });
    }
  }
  return files;
}

/**
 * Writes the bundle's files under `output`, making only the folders inside the files' own paths
 * (`bundle/manifests`, `catalog/…`): `deno task bundle` may write those and nothing else, not even
 * `.` itself. A write the permissions refuse says which permission the command needs.
 */
async function writeBundle(output: string, files: BundleFile[]): Promise<void> {
  for (const file of files) {
    const path = `${output}/${file.path}`;
    try {
      const folder = file.path.lastIndexOf("/");
      if (folder > 0) {
        await Deno.mkdir(`${output}/${file.path.slice(0, folder)}`, { recursive: true });
      }
      await Deno.writeTextFile(path, file.text);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotCapable)) throw error;
      throw new Error(
        `cannot write ${path}: no write permission. \`deno task bundle\` may write bundle/, ` +
          "bundle.Dockerfile and catalog/ in this folder; for --output DIR, run the bundle " +
          "task's command (deno.json) with --allow-write=DIR instead",
      );
    }
    console.log(`wrote ${path}`);
  }
}

/**
 * Runs the command line; returns the exit code. An own binary passes its own `catalog`: the
 * plugins it carries instead of ours, with the whole command line (run, crds, rbac, install).
 */
export async function main(
  argv: string[],
  options: { catalog?: CatalogEntry[] } = {},
): Promise<number> {
  if (options.catalog) carried = () => options.catalog!;
  // `deno task start -- --flag` passes the separator on; it means nothing here.
  const args = argv[0] === "--" ? argv.slice(1) : argv;
  const command = args[0] && !args[0].startsWith("-") ? args[0] : "run";
  const rest = command === args[0] ? args.slice(1) : args;
  if (rest[0] === "--") rest.shift();
  if (!COMMANDS[command]) {
    console.error(
      `unknown command "${command}"; commands: ${Object.keys(COMMANDS).join(", ")} (see --help)`,
    );
    return 2;
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    console.log(help(command === args[0] ? command : undefined));
    return 0;
  }
  try {
    // Each command reads its own flags, typed by their specs.
    const flags = <S extends FlagSpecs>(specs: S) => {
      const { values, positional } = parseFlags(rest, specs);
      if (positional.length) throw new UsageError(`unexpected argument "${positional[0]}"`);
      return values;
    };
    switch (command) {
      case "version":
        flags(COMMANDS.version.flags);
        console.log(`ptemplate-operator ${VERSION} (deno ${Deno.version.deno})`);
        return 0;
      case "crds": {
        const crds = crdsOf(await catalogFor(flags(PLUGINS)));
        console.log(
          crds.map((crd) => stringify(crd, { lineWidth: 0, aliasDuplicateObjects: false }))
            .join("---\n"),
        );
        return 0;
      }
      case "rbac": {
        const values = flags(RBAC);
        const plugins = (await catalogFor(values)).map((entry) => entry.plugin);
        console.log(rbacYaml(rbacManifests(plugins, {
          namespaces: values.namespace,
          webhooks: values.webhooks,
        })));
        return 0;
      }
      case "bundle": {
        const values = flags(BUNDLE);
        await writeBundle(values.output ?? ".", await bundleFor(values));
        return 0;
      }
      case "scorecard": {
        const values = flags(SCORECARD);
        const files = values.bundle ? await readBundle(values.bundle) : await bundleFor(values);
        const results = bundleChecks(files);
        for (const { check, problems } of results) {
          console.log(`${problems.length ? "FAIL" : "pass"}  ${check}`);
          for (const problem of problems) console.log(`      ${problem}`);
        }
        return results.some((r) => r.problems.length) ? 1 : 0;
      }
      case "install":
        await install(flags(INSTALL));
        return 0;
      case "uninstall":
        await uninstall(flags(UNINSTALL));
        return 0;
      default:
        await run(flags(RUN));
        return 0;
    }
  } catch (error) {
    // One line, never a stack: 2 when the command line is wrong, 1 when the world is.
    const misuse = error instanceof UsageError ||
      (error instanceof KubeconfigError && error.misuse);
    const message = error instanceof Error ? error.message : String(error);
    console.error(
      `error: ${message.replaceAll("\n", " ")}${
        misuse ? ` (see ptemplate-operator ${command} --help)` : ""
      }`,
    );
    return misuse ? 2 : 1;
  }
}

// No top-level await: a `--plugin` module may import this module (for `main`, `VERSION`), and
// its import would wait for this module's evaluation, which would wait for the plugin: a cycle.
if (import.meta.main) main(Deno.args).then((code) => Deno.exit(code));
