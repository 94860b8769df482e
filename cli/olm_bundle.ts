/**
 * The Operator Lifecycle Manager bundle and file-based catalog of this operator, made from the
 * sources we already have: the Deployment in `deploy/core/`, the RBAC the plugins derive, the
 * CRDs of the catalog, `examples/`. Nothing in it is written by hand, so nothing drifts.
 */
import { parseAllDocuments, stringify } from "yaml";
import type { Plugin, Unstructured } from "../mod.ts";
import {
  ACCESS_REVIEW_RULES,
  LEADER_ELECTION_RULES,
  type OperatorIdentity,
  type PolicyRule,
  PTEMPLATE_OPERATOR,
  rbacRules,
} from "../runtime/mod.ts";
import type { CatalogEntry } from "./plugin_catalog.ts";
import { type OpenApiSchema, storedVersion } from "../kube/custom_resource_definition.ts";
import { conversionCrdNames, crdsOf, crdsWithConversion } from "./plugin_catalog.ts";
import { listingOf } from "./olm_listing.ts";
import { webhookConfigurations } from "./webhook_manifests.ts";

/** Not yet `stable`: the API is v1alpha1/v1beta1. */
export const CHANNEL = "candidate";
/** The oldest Kubernetes the operator is tested against (the CRDs use CEL and field paths). */
export const MIN_KUBE_VERSION = "1.30.0";
/**
 * Where the container serves webhooks (`--webhook-bind-address`'s default), and the port of the
 * Service OLM makes for them, `<deployment>-service`; OLM mounts the certificate it issues where
 * the operator looks by default (`/tmp/k8s-webhook-server/serving-certs`).
 */
const WEBHOOK_PORT = 9443;

/** What `olmBundle` writes: whose bundle, which version and images, and which plugins. */
export interface BundleOptions {
  /**
   * Whose bundle: the package, the CSV, its ServiceAccount, suggested namespace and labels are
   * named after it (default ours). deploy/core/ is ours; another operator's bundle takes its
   * Deployment and metrics objects with the operator's names in place of ours.
   */
  operator?: OperatorIdentity;
  /** Semantic version without a `v`, e.g. `0.2.0`. */
  version: string;
  /** The operator image, pinned (by digest, ideally). */
  image: string;
  /** The bundle image, for the catalog entry. */
  bundleImage: string;
  /** The version this one upgrades from, if any. */
  replaces?: string;
  /** The plugins (and their CRDs) the bundle carries. */
  catalog: CatalogEntry[];
  /** `metadata.annotations.createdAt`; default now. */
  createdAt?: string;
  /** `alm-examples`: ours `examples/seed.yaml` unless given; another operator's none unless given. */
  examples?: unknown[];
}

/** One file of a bundle, to write under the output folder. */
export interface BundleFile {
  /** Relative to the output folder: `bundle/…`, `bundle.Dockerfile`, `catalog/…`. */
  path: string;
  /** Its contents. */
  text: string;
}

const root = new URL("../", import.meta.url);
/** A YAML file of the runtime's repository, a checkout or its release URL (hence fetch). */
async function readYaml(path: string, operator: OperatorIdentity): Promise<Unstructured[]> {
  const url = new URL(path, root);
  const text = await fetch(url).then((r) => {
    if (!r.ok) throw new Error(`${r.status} ${r.statusText}`);
    return r.text();
  }).catch((error) => {
    throw new Error(
      `the bundle is made from the runtime's ${path}, which cannot be read at ${url} ` +
        `(${error.message}): import the runtime from a checkout, or allow the network to it`,
    );
  });
  return parseAllDocuments(text).map((d) => renamed(d.toJS() as Unstructured, operator));
}

/**
 * An object of deploy/ (ours) with the operator's names in place of ours: `ptemplate-operator`
 * and `ptemplate-operator-…` (the Deployment, its labels and ServiceAccount, the metrics Service
 * and reader role) become `<name>` and `<name>-…`.
 */
function renamed<T>(value: T, operator: OperatorIdentity): T {
  const ours = PTEMPLATE_OPERATOR.name;
  if (operator.name === ours) return value;
  if (typeof value === "string") {
    return (value === ours || value.startsWith(`${ours}-`)
      ? operator.name + value.slice(ours.length)
      : value) as T;
  }
  if (Array.isArray(value)) return value.map((v) => renamed(v, operator)) as T;
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [renamed(k, operator), renamed(v, operator)]),
    ) as T;
  }
  return value;
}

/** Every file of the bundle and its catalog entry. */
export async function olmBundle(options: BundleOptions): Promise<BundleFile[]> {
  const operator = options.operator ?? PTEMPLATE_OPERATOR;
  const PACKAGE = operator.name;
  const LABELS = labelsOf(operator);
  if (!/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(options.version)) {
    throw new TypeError(`--version "${options.version}" is not a semantic version like 0.2.0`);
  }
  const csv = await clusterServiceVersion(options);
  // OLM rewrites the conversion's clientConfig on install (its Service, its CA); this one says
  // where that will be when installed in the suggested namespace.
  const [deployment] = (csv.spec as { install: { spec: { deployments: { name: string }[] } } })
    .install.spec.deployments;
  const crds = crdsWithConversion(options.catalog, {
    service: {
      namespace: operator.namespace,
      name: `${deployment.name.replaceAll(".", "-")}-service`,
      path: "/convert",
      port: WEBHOOK_PORT,
    },
  });
  const [service] = await readYaml("deploy/core/metrics_service.yaml", operator);
  // What a Prometheus is bound to, to read the operator's /metrics (HTTPS, checked callers).
  const [metricsReader] = await readYaml("deploy/core/metrics_reader_role.yaml", operator);
  const yaml = (o: unknown) => stringify(o, { lineWidth: 0, aliasDuplicateObjects: false });
  const annotations = {
    "operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
    "operators.operatorframework.io.bundle.manifests.v1": "manifests/",
    "operators.operatorframework.io.bundle.metadata.v1": "metadata/",
    "operators.operatorframework.io.bundle.package.v1": PACKAGE,
    "operators.operatorframework.io.bundle.channels.v1": CHANNEL,
    "operators.operatorframework.io.bundle.channel.default.v1": CHANNEL,
  };
  return [
    { path: `bundle/manifests/${PACKAGE}.clusterserviceversion.yaml`, text: yaml(csv) },
    ...crds.map((crd) => ({
      path: `bundle/manifests/${crd.metadata!.name}.yaml`,
      text: yaml(crd),
    })),
    {
      path: `bundle/manifests/${service.metadata!.name}_v1_service.yaml`,
      text: yaml({
        ...service,
        metadata: { ...service.metadata, labels: { ...service.metadata?.labels, ...LABELS } },
      }),
    },
    {
      path: `bundle/manifests/${
        metricsReader.metadata!.name
      }_rbac.authorization.k8s.io_v1_clusterrole.yaml`,
      text: yaml({ ...metricsReader, metadata: { ...metricsReader.metadata, labels: LABELS } }),
    },
    { path: "bundle/metadata/annotations.yaml", text: yaml({ annotations }) },
    {
      path: "bundle.Dockerfile",
      text: [
        "# Generated by `deno task bundle`. Build: docker build -f bundle.Dockerfile -t <bundle image> .",
        "FROM scratch",
        ...Object.entries(annotations).map(([k, v]) => `LABEL ${k}=${v}`),
        "COPY bundle/manifests /manifests/",
        "COPY bundle/metadata /metadata/",
        "",
      ].join("\n"),
    },
    { path: `catalog/${PACKAGE}/index.yaml`, text: catalogEntry(options, csv) },
  ];
}

/** The labels of everything the bundle makes. */
function labelsOf(operator: OperatorIdentity): Record<string, string> {
  return { "app.kubernetes.io/name": operator.name };
}

/** The file-based catalog: the package, its channel with the upgrade edge, and the bundle. */
function catalogEntry(options: BundleOptions, csv: Unstructured): string {
  const PACKAGE = (options.operator ?? PTEMPLATE_OPERATOR).name;
  const name = csv.metadata!.name!;
  const entry: Record<string, unknown> = { name };
  if (options.replaces) entry.replaces = `${PACKAGE}.v${options.replaces}`;
  // Any version before this one may jump straight here.
  entry.skipRange = `<${options.version}`;
  const owned = (csv.spec as { customresourcedefinitions: { owned: Owned[] } })
    .customresourcedefinitions.owned;
  const documents = [
    { schema: "olm.package", name: PACKAGE, defaultChannel: CHANNEL },
    { schema: "olm.channel", package: PACKAGE, name: CHANNEL, entries: [entry] },
    {
      schema: "olm.bundle",
      name,
      package: PACKAGE,
      image: options.bundleImage,
      properties: [
        { type: "olm.package", value: { packageName: PACKAGE, version: options.version } },
        ...owned.map((o) => ({
          type: "olm.gvk",
          value: { group: o.name.split(".").slice(1).join("."), version: o.version, kind: o.kind },
        })),
      ],
    },
  ];
  return documents.map((d) => stringify(d, { lineWidth: 0 })).join("---\n");
}

interface Descriptor {
  path: string;
  displayName: string;
  description: string;
  "x-descriptors"?: string[];
}

interface Owned {
  name: string;
  version: string;
  kind: string;
  displayName: string;
  description: string;
  resources: { kind: string; name: string; version: string }[];
  specDescriptors: Descriptor[];
  statusDescriptors: Descriptor[];
}

type Schema = OpenApiSchema;

/** "requiredDevices" → "Required Devices". */
function displayName(name: string): string {
  const words = name.replace(/([a-z])([A-Z])/g, "$1 $2");
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** One descriptor per top-level field, with the schema's description. */
function descriptors(schema: Schema | undefined, status: boolean): Descriptor[] {
  return Object.entries(schema?.properties ?? {}).map(([path, field]) => ({
    path,
    displayName: displayName(path),
    description: field.description ?? "",
    ...(status && path === "conditions"
      ? { "x-descriptors": ["urn:alm:descriptor:io.kubernetes.conditions"] }
      : {}),
  }));
}

/** The kinds a plugin creates, as the CSV lists them under an owned CRD. */
function resourcesOf(plugins: Plugin[]): Owned["resources"] {
  const seen = new Map<string, Owned["resources"][number]>();
  for (const plugin of plugins) {
    for (const owned of plugin.owns ?? []) {
      const resource = "resource" in owned ? owned.resource : owned;
      seen.set(resource.kind, {
        kind: resource.kind,
        name: `${resource.plural}${resource.group ? `.${resource.group}` : ""}`,
        version: resource.version,
      });
    }
  }
  return [...seen.values()];
}

function ownedCrds(catalog: CatalogEntry[]): Owned[] {
  return crdsOf(catalog).map((crd) => {
    const spec = crd.spec as { names: { kind: string } };
    const { name: version, schema: root } = storedVersion(crd);
    const plugins = catalog.filter((e) =>
      e.crds.some((c) => c.metadata?.name === crd.metadata?.name)
    )
      .map((e) => e.plugin);
    return {
      name: crd.metadata!.name!,
      version,
      kind: spec.names.kind,
      displayName: displayName(spec.names.kind),
      description: root.description ?? `A ${spec.names.kind}.`,
      resources: resourcesOf(plugins),
      specDescriptors: descriptors(root.properties?.spec, false),
      statusDescriptors: descriptors(root.properties?.status, true),
    };
  });
}

/**
 * Namespaced rules and the rest: OLM grants `permissions` in the namespaces it targets. With the
 * webhooks' reads: OLM serves them.
 */
function splitRules(plugins: Plugin[]): { namespaced: PolicyRule[]; cluster: PolicyRule[] } {
  const namespaced = rbacRules(plugins, {
    namespaced: true,
    omitClusterScoped: true,
    webhooks: true,
  });
  const inNamespace = new Set(
    namespaced.flatMap((r) => r.apiGroups.flatMap((g) => r.resources.map((res) => `${g}|${res}`))),
  );
  const cluster = rbacRules(plugins, { webhooks: true }).map((r) => ({
    ...r,
    resources: r.resources.filter((res) => !inNamespace.has(`${r.apiGroups[0]}|${res}`)),
  })).filter((r) => r.resources.length);
  return { namespaced, cluster };
}

/**
 * The webhooks as OLM installs them: a configuration per admission webhook of the plugins, and
 * the conversion of their CRDs; all served by the Deployment on WEBHOOK_PORT.
 */
function webhookDefinitions(
  catalog: CatalogEntry[],
  deploymentName: string,
  operator: OperatorIdentity,
): unknown[] {
  const served = { deploymentName, containerPort: WEBHOOK_PORT, targetPort: WEBHOOK_PORT };
  type Hook = { name: string; clientConfig: { path: string } };
  const admission = webhookConfigurations(
    catalog.map((e) => e.plugin),
    (path) => ({ path }),
    operator,
  )
    .flatMap((config) =>
      (config.webhooks as Hook[]).map(({ name, clientConfig, ...hook }) => ({
        generateName: name,
        type: config.kind === "ValidatingWebhookConfiguration"
          ? "ValidatingAdmissionWebhook"
          : "MutatingAdmissionWebhook",
        ...served,
        webhookPath: clientConfig.path,
        ...hook,
      }))
    );
  const conversionCRDs = conversionCrdNames(catalog);
  const conversion = conversionCRDs.length
    ? [{
      generateName: `conversion.${operator.name}`,
      type: "ConversionWebhook",
      ...served,
      webhookPath: "/convert",
      conversionCRDs,
      sideEffects: "None",
      admissionReviewVersions: ["v1"],
    }]
    : [];
  return [...admission, ...conversion];
}

async function clusterServiceVersion(options: BundleOptions): Promise<Unstructured> {
  const operator = options.operator ?? PTEMPLATE_OPERATOR;
  const PACKAGE = operator.name;
  const LABELS = labelsOf(operator);
  const ours = operator.name === PTEMPLATE_OPERATOR.name;
  const examples = options.examples ?? (ours ? await readYaml("examples/seed.yaml", operator) : []);
  const listing = listingOf(operator, examples);
  const [deployment] = await readYaml("deploy/core/deployment.yaml", operator);
  const plugins = options.catalog.map((e) => e.plugin);
  const { namespaced, cluster } = splitRules(plugins);
  const spec = structuredClone(deployment.spec) as {
    template: {
      metadata?: { annotations?: Record<string, string> };
      spec: {
        containers: {
          image: string;
          args?: string[];
          env?: unknown[];
          ports?: { name: string; containerPort: number }[];
        }[];
      };
    };
  };
  const container = spec.template.spec.containers[0];
  container.image = options.image;
  // OLM installs into a namespace of its choosing: the Lease goes where the pod runs, and the
  // namespaces to watch come from the OperatorGroup.
  container.args = (container.args ?? []).filter((a) =>
    !a.startsWith("--leader-election-namespace")
  );
  container.env = [...container.env ?? [], {
    name: "WATCH_NAMESPACE",
    valueFrom: { fieldRef: { fieldPath: "metadata.annotations['olm.targetNamespaces']" } },
  }];
  container.ports = [...container.ports ?? [], { name: "webhooks", containerPort: WEBHOOK_PORT }];
  const webhooks = webhookDefinitions(options.catalog, deployment.metadata!.name!, operator);
  // OLM refuses a conversion webhook unless the operator is installed for all namespaces only:
  // the CRD, and so its conversion, is cluster-wide.
  const allNamespacesOnly = webhooks.some((w) =>
    (w as { type: string }).type === "ConversionWebhook"
  );
  return {
    apiVersion: "operators.coreos.com/v1alpha1",
    kind: "ClusterServiceVersion",
    metadata: {
      name: `${PACKAGE}.v${options.version}`,
      annotations: {
        "alm-examples": JSON.stringify(listing.examples),
        capabilities: "Basic Install",
        categories: "OpenShift Optional",
        containerImage: options.image,
        createdAt: options.createdAt ?? new Date().toISOString().replace(/\.\d+Z$/, "Z"),
        description: listing.summary,
        "operatorframework.io/suggested-namespace": operator.namespace,
        ...listing.repository ? { repository: listing.repository } : {},
        support: `${operator.name} maintainers`,
        "features.operators.openshift.io/disconnected": "false",
        "features.operators.openshift.io/fips-compliant": "false",
        "features.operators.openshift.io/proxy-aware": "false",
        "features.operators.openshift.io/tls-profiles": "false",
        "features.operators.openshift.io/token-auth-aws": "false",
        "features.operators.openshift.io/token-auth-azure": "false",
        "features.operators.openshift.io/token-auth-gcp": "false",
      },
      labels: LABELS,
    },
    spec: {
      displayName: listing.displayName,
      description: listing.description,
      version: options.version,
      ...(options.replaces ? { replaces: `${PACKAGE}.v${options.replaces}` } : {}),
      minKubeVersion: MIN_KUBE_VERSION,
      maturity: "alpha",
      provider: { name: `${operator.name} project` },
      maintainers: listing.maintainers,
      ...listing.repository ? { links: [{ name: "Source", url: listing.repository }] } : {},
      keywords: listing.keywords,
      icon: [{ base64data: listing.icon, mediatype: "image/svg+xml" }],
      installModes: [
        { type: "OwnNamespace", supported: !allNamespacesOnly },
        { type: "SingleNamespace", supported: !allNamespacesOnly },
        { type: "MultiNamespace", supported: !allNamespacesOnly },
        { type: "AllNamespaces", supported: true },
      ],
      customresourcedefinitions: { owned: ownedCrds(options.catalog) },
      webhookdefinitions: webhooks,
      install: {
        strategy: "deployment",
        spec: {
          deployments: [{ name: deployment.metadata!.name, label: LABELS, spec }],
          permissions: [{
            serviceAccountName: operator.name,
            rules: [...LEADER_ELECTION_RULES, ...namespaced],
          }],
          // Checking the callers of /metrics is cluster-scoped whatever the install mode.
          clusterPermissions: [{
            serviceAccountName: operator.name,
            rules: [...cluster, ...ACCESS_REVIEW_RULES],
          }],
        },
      },
    },
  };
}
