/**
 * Every flag of the command line, with what it does and its default, in one table: the commands
 * take their flags from here, and `--help` is derived from it, so a default is written once.
 */
import { MAX_SHARDS } from "../../kube/mod.ts";
import { DEFAULT_CERT_DIR, MAX_CONCURRENCY } from "../../runtime/mod.ts";
import type { EnvSpecs } from "../flags/environment.ts";
import type { FlagSpecs } from "../flags/flags.ts";
import { RELEASE_URL } from "../release/runtime_reference.ts";
import { BIND_ADDRESS, existing, numberFrom, objectName, seconds } from "../flags/value_rules.ts";
import { webhookNames } from "../manifests/webhook_manifests.ts";

/**
 * What to do about a certificate directory that is not there: the Secret's volume (cert-manager,
 * OLM) is made before the operator starts, so a missing one is a wrong path, not a late mount.
 */
const CERT_DIR_FIX = "mount the certificate's Secret (tls.crt, tls.key) there, as " +
  "deploy/webhooks/cert-manager does, or point the flag at the directory that holds them";

/** Where `/metrics` listens when `--metrics-bind-address` is not given. */
export const METRICS_ADDRESS = { secure: ":8443", plain: "127.0.0.1:8080" };

/** Reaching the cluster, and how hard. */
export const CONNECTION = {
  kubeconfig: {
    kind: "string",
    placeholder: "FILE",
    help: "kubeconfig",
    defaultIs: "$KUBECONFIG, in-cluster, ~/.kube/config",
    valid: existing("file", "give the path of a kubeconfig, or leave the flag out"),
  },
  context: {
    kind: "string",
    placeholder: "NAME",
    help: "kubeconfig context",
    defaultIs: "its current-context",
  },
  "kube-api-qps": {
    kind: "number",
    placeholder: "QPS",
    help: "requests per second to the API server, sustained",
    valid: numberFrom(0, Infinity, "", { above: true }),
    // High enough that a large start-up is bound by the API server rather than by this limit, low
    // enough that a loop gone wrong stays within the same order (bench/README.md, "The rate limit").
    default: 1000,
  },
  "kube-api-burst": {
    kind: "integer",
    placeholder: "N",
    help: "requests that may go at once after a quiet spell",
    valid: numberFrom(1, Infinity, "", { integer: true }),
    default: 2000,
  },
} as const satisfies FlagSpecs;

/** Which plugins: the binary's own, edited, or a module's. */
export const PLUGINS = {
  plugins: {
    kind: "list",
    placeholder: "LIST",
    help: "plugins to run: the exact set (a,b) or edits to the default (-a,+b)",
  },
  plugin: {
    kind: "list",
    placeholder: "MODULE",
    help: "run the plugins a module exports, and only those unless --plugins adds ours " +
      "(+kmm-module); a file path, optionally pinned (./x.ts#sha256=HEX); repeatable",
  },
} as const satisfies FlagSpecs;

/** Where plugins' code runs and what it may take (runtime/isolation/). */
export const ISOLATION = {
  "plugin-isolation": {
    kind: "string",
    placeholder: "MODE",
    choices: ["none", "worker"],
    help: "worker: every --plugin plugin runs in a Worker in a process of its own, which a " +
      "reconcile past its deadline or a heap past --plugin-heap-limit ends (SIGKILL) instead of " +
      "the operator (a plugin may " +
      'ask for it with isolation: "worker"); none: in the operator\'s isolate',
    default: "none",
  },
  "reconcile-timeout": {
    kind: "number",
    placeholder: "SECONDS",
    help: "the most one reconcile may take: past it its writes are refused, its slot freed and " +
      "the key retried with backoff; quarantined after 3 in a row until the object changes",
    valid: seconds(),
    default: 60,
  },
  "plugin-heap-limit": {
    kind: "integer",
    placeholder: "MIB",
    help: "the JavaScript heap a plugin's Worker may grow to before it is ended",
    valid: numberFrom(1, Infinity, "MiB", { integer: true }),
    default: 256,
  },
} as const satisfies FlagSpecs;

/** `run`: the operator itself. */
export const RUN = {
  ...CONNECTION,
  namespace: {
    kind: "list",
    placeholder: "NS",
    help: "watch only this namespace (repeatable; default all)",
    valid: objectName("label", "a namespace name"),
  },
  "leader-elect": {
    kind: "boolean",
    help: "elect a leader first",
    defaultIs: "on in-cluster, off on a workstation",
  },
  "leader-election-namespace": {
    kind: "string",
    placeholder: "NS",
    help: "namespace of the Lease",
    defaultIs: "the pod's, or the kubeconfig context's",
    valid: objectName("label", "a namespace name"),
  },
  "leader-election-id": {
    kind: "string",
    placeholder: "NAME",
    help: "name of the Lease (with --shards, the prefix of the ring's Leases)",
    valid: objectName("subdomain", "a Lease name"),
    default: (operator) => operator.leaseName,
  },
  shards: {
    kind: "integer",
    placeholder: "N",
    help: `split the work among the replicas: N shards (1 to ${MAX_SHARDS}), each a Lease ` +
      "<leader-election-id>-shard-<i> shared out evenly, each replica caching only its own; " +
      "give every replica the same N",
    valid: numberFrom(1, MAX_SHARDS, "shards", { integer: true }),
    defaultIs: "none: one leader does all the work",
  },
  "metrics-bind-address": {
    kind: "string",
    placeholder: "ADDR",
    help: "where /metrics listens, host:port or :port; 0 disables",
    valid: BIND_ADDRESS,
    defaultIs: `${METRICS_ADDRESS.secure} with --metrics-secure, else ${METRICS_ADDRESS.plain}`,
  },
  "metrics-secure": {
    kind: "boolean",
    help: "serve /metrics over HTTPS, only to callers the API server authorizes (TokenReview and " +
      "SubjectAccessReview on get /metrics)",
    defaultIs: "on in-cluster, off on a workstation",
  },
  "metrics-cert-dir": {
    kind: "string",
    placeholder: "DIR",
    help: "tls.crt and tls.key for /metrics over HTTPS, reloaded when they change",
    valid: existing("directory", CERT_DIR_FIX),
    defaultIs: "a self-signed certificate made at start",
  },
  "health-probe-bind-address": {
    kind: "string",
    placeholder: "ADDR",
    help: "where /healthz and /readyz listen; 0 disables",
    valid: BIND_ADDRESS,
    default: ":8081",
  },
  "log-level": {
    kind: "string",
    placeholder: "LEVEL",
    choices: ["debug", "info", "warning", "error"],
    help: "debug, info, warning or error",
    default: "info",
  },
  "log-format": {
    kind: "string",
    placeholder: "FORMAT",
    choices: ["text", "json", "auto"],
    help: "text, json, or auto: text on a terminal, JSON otherwise",
    default: "auto",
  },
  "webhook-bind-address": {
    kind: "string",
    placeholder: "ADDR",
    help: "where admission and conversion webhooks listen (HTTPS); 0 disables",
    valid: BIND_ADDRESS,
    default: ":9443",
  },
  "webhook-cert-dir": {
    kind: "string",
    placeholder: "DIR",
    help: "tls.crt and tls.key for the webhooks, reloaded when they change",
    valid: existing("directory", CERT_DIR_FIX),
    defaultIs: `${DEFAULT_CERT_DIR}; webhooks are off when it has none and was not given`,
  },
  "webhook-cert-mode": {
    kind: "string",
    placeholder: "MODE",
    choices: ["dir", "self-managed"],
    help: "dir: certificates from --webhook-cert-dir (cert-manager); self-managed: the operator " +
      "keeps them in a Secret and the caBundles up to date",
    default: "dir",
  },
  "webhook-service": {
    kind: "string",
    placeholder: "NAME",
    help: "the Service the API server calls the webhooks by (self-managed certificates), in " +
      "the operator's namespace",
    valid: objectName("dns1035", "a Service name"),
    default: (operator) => webhookNames(operator).service,
  },
  "dry-run": {
    kind: "boolean",
    help: "rehearse: visit every object once against the live cluster, beside the real operator, " +
      "taking no Lease and writing nothing (child writes go as server-side dry runs; no status, " +
      "Event or finalizer), say what would change, and exit",
  },
  "dry-run-output": {
    kind: "string",
    placeholder: "FORMAT",
    choices: ["text", "json"],
    help: "with --dry-run: what would change, object by object, on stdout as text lines or one " +
      "JSON document (the log stays on stderr)",
    default: "text",
  },
  "priority-queue": {
    kind: "boolean",
    help: "edits before bulk work: a start's, a resync's or a shard's backlog does not hold up " +
      "a person's edit (false: one line, first come first served)",
    default: true,
  },
  "resync-period": {
    kind: "number",
    placeholder: "SECONDS",
    help: "every object is visited again this often, changed or not, as bulk work behind edits " +
      "(a converged object writes nothing); shorter catches what was missed sooner",
    valid: seconds(),
    default: 36_000,
  },
  "visit-history": {
    kind: "integer",
    placeholder: "N",
    help: "recent visits each controller keeps for explain (a ring: its memory is bounded)",
    valid: numberFrom(1, 1_000_000, "visits", { integer: true }),
    default: 1000,
  },
  concurrency: {
    kind: "integer",
    placeholder: "N",
    help: `workers per plugin, 1 to ${MAX_CONCURRENCY}`,
    valid: numberFrom(1, MAX_CONCURRENCY, "workers per plugin", { integer: true }),
    // Reconciles mostly wait on the API server, so more workers keep more requests in flight, up
    // to where the API server is the bound and more are no faster; fewer trade time for a lower
    // peak of memory (bench/README.md, "Workers per plugin").
    default: 32,
  },
  ...ISOLATION,
  ...PLUGINS,
} as const satisfies FlagSpecs;

/**
 * The environment `run` reads, each variable with its rule: a value set that breaks it is refused
 * at start as a flag's would be. (`LOG_TOKENS` and `LOG_STREAM` are npm:yaml's, read by it alone.)
 */
export const RUN_ENVIRONMENT = {
  WATCH_NAMESPACE: {
    help: "the namespaces to watch, comma-separated, when --namespace is not given (OLM sets " +
      "it from its OperatorGroup); empty: all",
    list: true,
    valid: objectName("label", "a namespace name"),
  },
  POD_NAME: {
    help: "the pod's name (the Deployment sets it from metadata.name), the prefix of the " +
      "leader-election identity the leader fence checks",
    valid: objectName("subdomain", "a pod name"),
  },
  KUBECONFIG: { help: "kubeconfig files, colon-separated, merged; those missing are skipped" },
  KUBERNETES_SERVICE_HOST: { help: "the API server's address in a pod (the kubelet sets it)" },
  KUBERNETES_SERVICE_PORT: {
    help: "the API server's port in a pod (the kubelet sets it)",
    valid: numberFrom(1, 65535, "", { integer: true }),
  },
  HOME: { help: "where ~/.kube/config is looked for" },
} as const satisfies EnvSpecs;

/** `rbac`: what the plugins need. */
export const RBAC = {
  namespace: {
    kind: "list",
    placeholder: "NS",
    help: "grant in this namespace only, with a Role (repeatable; default: a ClusterRole)",
  },
  webhooks: {
    kind: "boolean",
    help: "with what the plugins' admission reads (when their webhooks are served)",
  },
  shards: {
    kind: "boolean",
    help: "for run --shards: with the ring's Role, and the shard fence instead of the leader's",
  },
  ...PLUGINS,
} as const satisfies FlagSpecs;

/** `install`: the CRDs into a cluster. */
export const INSTALL = { ...CONNECTION, ...PLUGINS } as const satisfies FlagSpecs;

/** `check`: the stored objects this version's rules would refuse as new. */
export const CHECK = INSTALL;

/** `explain`: one object's recent reconciles, from a running operator. */
export const EXPLAIN = {
  ...CONNECTION,
  ...PLUGINS,
  endpoint: {
    kind: "string",
    placeholder: "URL",
    help: "the running operator's metrics address (in a cluster: port-forward to the leader)",
    default: `http://${METRICS_ADDRESS.plain}`,
  },
  "ca-file": {
    kind: "string",
    placeholder: "FILE",
    help: "the CA that signed the metrics certificate, for an https endpoint",
    valid: existing("file", "give the CA certificate's path (PEM)"),
  },
  "service-account": {
    kind: "string",
    placeholder: "NS/NAME",
    help: "ask as this ServiceAccount (a token made for it; it must be bound to the metrics " +
      "reader ClusterRole)",
  },
  "token-file": {
    kind: "string",
    placeholder: "FILE",
    help: "ask with the bearer token in this file",
    valid: existing("file", "give the path of a file holding a bearer token"),
  },
} as const satisfies FlagSpecs;

/** `uninstall`: the CRDs out of a cluster, and what they hold with them. */
export const UNINSTALL = {
  ...INSTALL,
  yes: { kind: "boolean", help: "delete even when objects of the kinds exist" },
} as const satisfies FlagSpecs;

/** `bundle`: the OLM bundle and catalog. */
export const BUNDLE = {
  version: {
    kind: "string",
    placeholder: "X.Y.Z",
    help: "the bundle's version",
    default: (operator) => operator.version,
  },
  image: {
    kind: "string",
    placeholder: "IMAGE",
    help: "the operator image, by digest ideally",
    defaultIs: (operator) => `${operator.image}:v<version>`,
  },
  "bundle-image": {
    kind: "string",
    placeholder: "IMAGE",
    help: "the bundle image, for the catalog",
    defaultIs: (operator) => `${operator.image}-bundle:v<version>`,
  },
  replaces: { kind: "string", placeholder: "X.Y.Z", help: "the version this one upgrades" },
  output: {
    kind: "string",
    placeholder: "DIR",
    help: "where to write bundle/, bundle.Dockerfile, catalog/",
    default: ".",
  },
  ...PLUGINS,
} as const satisfies FlagSpecs;

const { output: _written, ...BUNDLE_CONTENT } = BUNDLE;

/** `scorecard`: checks of a bundle, written or made now. */
export const SCORECARD = {
  bundle: {
    kind: "string",
    placeholder: "DIR",
    help: "check this bundle folder",
    defaultIs: "the bundle `bundle` would write now",
  },
  ...BUNDLE_CONTENT,
} as const satisfies FlagSpecs;

/** `new`: an operator repository of its own, or a kind and plugin in one. */
export const NEW = {
  name: {
    kind: "string",
    placeholder: "NAME",
    help: "new <dir>: the operator's name, a DNS label (its ServiceAccount, RBAC, Lease, binary)",
  },
  domain: {
    kind: "string",
    placeholder: "DOMAIN",
    help: "new <dir>: its API domain, a DNS subdomain; its kinds' group",
  },
  runtime: {
    kind: "string",
    placeholder: "PATH|URL",
    help: "new <dir>: where it imports this runtime from: a checkout's folder, or a URL",
    defaultIs: `this checkout when run from one (deno task new), else ${RELEASE_URL}`,
  },
} as const satisfies FlagSpecs;
