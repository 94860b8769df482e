/**
 * The `Ptemplate` custom resource, defined once: its CRD (schema, validation, printer columns),
 * its TypeScript types, and how its two historical spellings and its defaults resolve.
 */
import type { PtemplateSpec, PtemplateStatus } from "./ptemplate_types.ts";
import {
  CONDITIONS_SCHEMA,
  customResourceDefinition,
  type Resource,
  type Unstructured,
} from "../mod.ts";

export const PTEMPLATE: Resource<Ptemplate, true> = {
  group: "pt.example.com",
  version: "v1alpha1",
  kind: "Ptemplate",
  plural: "ptemplates",
  namespaced: true,
};

/** v1beta1, served (with the conversion webhook) beside v1alpha1, which stays the stored version. */
export const PTEMPLATE_V1BETA1: Resource<Unstructured, true> = {
  group: PTEMPLATE.group,
  version: "v1beta1",
  kind: PTEMPLATE.kind,
  plural: PTEMPLATE.plural,
  namespaced: true,
};

export const DEFAULT_MAXDEV = 5;
export const DEFAULT_REQUIRED_DEVICES = 1;
export const DEFAULT_CONSUMER_IMAGE = "quay.io/chrisp262/pt-device-plugin:consumer-latest";
export const DEFAULT_DEVICE_PLUGIN_IMAGE = "quay.io/chrisp262/pt-device-plugin:plugin-latest";
/** The most devices one node's kernel module may create (its minor numbers). */
export const MAX_MAXDEV = 256;
/** `<name>-consumer` must be a valid DaemonSet name (63 characters). */
export const MAX_NAME_LENGTH = 63 - "-consumer".length;

// The spec and status types follow from the schema below: `deno task crds` generates them.
export type { PtemplateSpec, PtemplateStatus };
/** A reference to a Secret in the Ptemplate's namespace. */
export type SecretRef = NonNullable<PtemplateSpec["imageRepoSecret"]>;
/** Counters KMM reports for one part of a Module. */
export type NodeCounts = Required<NonNullable<PtemplateStatus["moduleLoader"]>>;

export interface Ptemplate {
  apiVersion?: string;
  kind?: string;
  metadata?: Unstructured["metadata"];
  spec: PtemplateSpec;
  status?: PtemplateStatus;
}

/** The spec with aliases resolved and defaults applied: what the plugins build from. */
export interface EffectiveSpec {
  maxdev: number;
  defaultmsg?: string;
  consumerImage: string;
  devicePluginImage: string;
  requiredDevices: number;
  pullSecret?: string;
  selector: Record<string, string>;
}

/**
 * Resolves the two spellings (the API server already refused setting both) and the defaults.
 * The aliased fields have no schema default, since a default on one spelling would collide
 * with a user who writes the other.
 */
export function effectiveSpec(spec: PtemplateSpec): EffectiveSpec {
  return {
    maxdev: spec.maxdev ?? DEFAULT_MAXDEV,
    defaultmsg: spec.defaultmsg,
    consumerImage: spec.consumerimage ?? spec.consumer ?? DEFAULT_CONSUMER_IMAGE,
    devicePluginImage: spec.deviceplugin ?? DEFAULT_DEVICE_PLUGIN_IMAGE,
    requiredDevices: spec.requiredDevices ?? DEFAULT_REQUIRED_DEVICES,
    pullSecret: (spec.imageRepoSecret ?? spec.imagePullSecret)?.name,
    selector: spec.selector,
  };
}

// Grammars, written with character classes rather than backslash escapes, so each reads the
// same in TypeScript, in CEL's string literals and in the generated YAML.

/** A DNS-1123 label, and a subdomain of them (`example.com`): a label key's prefix. */
const DNS_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS_SUBDOMAIN = `${DNS_LABEL}([.]${DNS_LABEL})*`;
/** A label key: an optional DNS subdomain and `/`, then a name; and its lengths (253, 63). */
const LABEL_KEY = `^(${DNS_SUBDOMAIN}/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`;
const LABEL_KEY_LENGTHS = "^([^/]{1,253}/)?[^/]{1,63}$";
/** A label value (at most 63 characters, given by maxLength). */
const LABEL_VALUE = "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$";

/**
 * The characters `defaultmsg` may use. It becomes `default_msg=<value>` on a modprobe command
 * line, and the kernel's parameter parser splits arguments on any byte its `isspace()` accepts
 * (which includes bytes that occur inside UTF-8 characters, like 0xA0) and treats `"` as a quote:
 * with anything beyond letters, digits and `. _ : + -` a value could smuggle in a second
 * parameter (`max_dev=…`) past its bounds, or not survive argv and shells on the way.
 */
export const DEFAULT_MSG_PATTERN = "^[A-Za-z0-9._:+-]{1,64}$";

/**
 * An image reference by the distribution reference grammar: an optional registry (DNS name or
 * [IPv6], optional :port) and `/`, lower-case path components joined by `.`, `_`, `__` or dashes,
 * an optional :tag and @algorithm:hex digest. Nothing path-like (`..`, a leading dash) passes.
 */
const DOMAIN_COMPONENT = "[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?";
const REGISTRY = `(${DOMAIN_COMPONENT}([.]${DOMAIN_COMPONENT})*|[[][a-fA-F0-9:]+[]])([:][0-9]+)?`;
const PATH_COMPONENT = "[a-z0-9]+(([._]|__|[-]+)[a-z0-9]+)*";
const TAG = "[:][A-Za-z0-9_][A-Za-z0-9_.-]{0,127}";
const DIGEST = "@[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*[:][0-9a-fA-F]{32,}";
export const IMAGE_PATTERN =
  `^(${REGISTRY}/)?${PATH_COMPONENT}(/${PATH_COMPONENT})*(${TAG})?(${DIGEST})?$`;

/**
 * What the kubelet adds to the grammar (github.com/distribution/reference's
 * ParseNormalizedNamed, then opencontainers/go-digest), each refused with InvalidImageName or a
 * failed pull on every node instead of by the API server:
 * - a digest's algorithm must be one the kubelet has (sha256, sha384, sha512) with exactly its
 *   length of lower-case hex digits;
 * - 64 hex digits alone are an image ID, not a name;
 * - the repository path may have at most 255 characters, counted after normalization: a name
 *   without a registry is on docker.io, and a one-component name there gets `library/` (8 more).
 *   The first component is a registry when it has a `.` or `:`, is `localhost`, or has capitals.
 */
export const IMAGE_DIGEST = "@(sha256:[a-f0-9]{64}|sha384:[a-f0-9]{96}|sha512:[a-f0-9]{128})$";
const IMAGE_ID = "^[a-f0-9]{64}$";
const PATH_LENGTH_RULE = "self.matches('^([^/]*[.:][^/]*|localhost|[^/]*[A-Z][^/]*)/') ? (" +
  "self.matches('^(docker[.]io|index[.]docker[.]io)/[^/:@]+([:@].*)?$') " +
  "? self.matches('^[^/]+/[^/:@]{1,247}([:@].*)?$') " +
  ": self.matches('^[^/]+/[^:@]{1,255}([:@].*)?$')) : (" +
  "self.matches('^[^/:@]+([:@].*)?$') " +
  "? self.matches('^[^/:@]{1,247}([:@].*)?$') " +
  ": self.matches('^[^:@]{1,255}([:@].*)?$'))";

function image(description: string, field: string): Record<string, unknown> {
  return {
    type: "string",
    description,
    // Bounds the CEL rules' cost, which the API server checks against its budget.
    maxLength: 512,
    "x-kubernetes-validations": [
      {
        rule: `self.matches('${IMAGE_PATTERN}')`,
        message: `${field} must be an image reference such as quay.io/org/image:tag: an ` +
          `optional registry host[:port]/, lower-case path components, an optional :tag and ` +
          `@digest`,
      },
      {
        rule: `!self.contains('@') || self.matches('${IMAGE_DIGEST}')`,
        message: `${field}: the digest after @ must be sha256:<64>, sha384:<96> or ` +
          `sha512:<128> lower-case hex digits; the kubelet refuses other algorithms, lengths ` +
          `and capitals`,
      },
      {
        rule: `!self.matches('${IMAGE_ID}')`,
        message: `${field} is 64 hex digits, an image ID rather than a name, which the kubelet ` +
          `refuses; name the image (registry/path:tag, or @sha256:<digest> after a name)`,
      },
      {
        rule: PATH_LENGTH_RULE,
        message: `${field}: the repository path may have at most 255 characters (the ` +
          `kubelet's limit; a name without a registry counts as docker.io/library/<name>)`,
      },
    ],
  };
}

function secretRef(description: string, field: string): Record<string, unknown> {
  return {
    type: "object",
    description,
    required: ["name"],
    properties: {
      name: {
        type: "string",
        description:
          "Name of a Secret of type kubernetes.io/dockerconfigjson in the same namespace.",
        "x-kubernetes-validations": [{
          rule: `size(self) <= 253 && self.matches('^${DNS_SUBDOMAIN}$')`,
          message: `${field}.name must name a Secret: lower-case letters, digits, '-' and '.', ` +
            `at most 253 characters`,
        }],
      },
    },
  };
}

/** The CustomResourceDefinition the API server validates Ptemplates with. */
export const PTEMPLATE_CRD: Unstructured = customResourceDefinition(PTEMPLATE, {
  description: "Ptemplate loads the ptemplate_char_dev kernel module (through a KMM Module) on " +
    "the selected nodes and runs consumer pods that use its devices.",
  shortNames: ["pt"],
  categories: ["all"],
  // The seed documents and the original operator's example.yaml say v1alpha.
  deprecatedAliases: [{
    version: "v1alpha",
    deprecationWarning: "pt.example.com/v1alpha Ptemplate is deprecated; use " +
      "pt.example.com/v1alpha1 (the same fields)",
  }],
  columns: [
    {
      name: "Ready",
      type: "string",
      jsonPath: '.status.conditions[?(@.type=="Ready")].status',
    },
    {
      name: "Reason",
      type: "string",
      jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
    },
    {
      name: "Consumers",
      type: "integer",
      jsonPath: ".status.readyConsumers",
      description: "Consumer pods ready",
    },
    {
      name: "Desired",
      type: "integer",
      jsonPath: ".status.desiredConsumers",
      description: "Consumer pods wanted (nodes matching the selector)",
    },
    { name: "Maxdev", type: "integer", jsonPath: ".spec.maxdev", priority: 1 },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
  ],
  validations: [{
    rule: `size(self.metadata.name) <= ${MAX_NAME_LENGTH}`,
    message: `metadata.name must be at most ${MAX_NAME_LENGTH} characters, so that ` +
      `"<name>-consumer" is a valid DaemonSet name`,
  }],
  spec: {
    type: "object",
    required: ["selector"],
    "x-kubernetes-validations": [
      {
        rule: "!(has(self.consumerimage) && has(self.consumer))",
        message: "set spec.consumerimage or its older spelling spec.consumer, not both",
        fieldPath: ".consumer",
      },
      {
        rule: "!(has(self.imageRepoSecret) && has(self.imagePullSecret))",
        message: "set spec.imageRepoSecret or its older spelling spec.imagePullSecret, not both",
        fieldPath: ".imagePullSecret",
      },
      {
        // Judged as a change: an object stored past the bound may be edited as long as the
        // excess does not grow.
        rule: "self.requiredDevices <= self.maxdev || (oldSelf.hasValue() && " +
          "self.requiredDevices - self.maxdev <= " +
          "oldSelf.value().requiredDevices - oldSelf.value().maxdev)",
        optionalOldSelf: true,
        message: "spec.requiredDevices must not exceed spec.maxdev: a consumer cannot ask " +
          "for more devices than a node has; raise maxdev or lower requiredDevices",
        fieldPath: ".requiredDevices",
      },
    ],
    properties: {
      maxdev: {
        type: "integer",
        default: DEFAULT_MAXDEV,
        description: `Devices the kernel module creates on each node (max_dev), 1–${MAX_MAXDEV}.`,
        "x-kubernetes-validations": [{
          rule: `self >= 1 && self <= ${MAX_MAXDEV}`,
          message: `spec.maxdev must be between 1 and ${MAX_MAXDEV}`,
        }],
      },
      defaultmsg: {
        type: "string",
        maxLength: 64,
        description: "Message the devices return (default_msg); passed to modprobe, so 1–64 " +
          "letters, digits, '.', '_', ':', '+' or '-'.",
        "x-kubernetes-validations": [{
          rule: `self.matches('${DEFAULT_MSG_PATTERN}')`,
          message: "spec.defaultmsg must be 1-64 letters, digits, '.', '_', ':', '+' or '-' " +
            "(it becomes the modprobe parameter default_msg=<value>, where spaces, quotes and " +
            "other characters would split or change the parameters)",
        }],
      },
      consumerimage: image(
        `Image of the consumer pods; default ${DEFAULT_CONSUMER_IMAGE}.`,
        "spec.consumerimage",
      ),
      consumer: image(
        "Older spelling of consumerimage (the original operator's); set one or the other.",
        "spec.consumer",
      ),
      deviceplugin: {
        ...image("Image of the device plugin that KMM runs.", "spec.deviceplugin"),
        default: DEFAULT_DEVICE_PLUGIN_IMAGE,
      },
      requiredDevices: {
        type: "integer",
        default: DEFAULT_REQUIRED_DEVICES,
        description: "Devices (example.com/ptemplate) each consumer pod asks for; at " +
          "least 1, at most maxdev.",
        "x-kubernetes-validations": [{
          rule: "self >= 1",
          message: "spec.requiredDevices must be at least 1",
        }],
      },
      imageRepoSecret: secretRef(
        "Secret for pulling the module, device plugin and consumer images.",
        "spec.imageRepoSecret",
      ),
      imagePullSecret: secretRef(
        "Older spelling of imageRepoSecret (the original operator's); set one or the other.",
        "spec.imagePullSecret",
      ),
      selector: {
        type: "object",
        description: "Node labels: the module is loaded, and consumers run, on nodes " +
          "that have all of them. Required, and must not be empty (that would select " +
          "every node).",
        additionalProperties: { type: "string", maxLength: 63 },
        // Bounds the cost of the rules below, which visit every label.
        maxProperties: 16,
        "x-kubernetes-validations": [
          {
            rule: "size(self) > 0",
            message: "spec.selector must name at least one node label, e.g. " +
              "node-role.kubernetes.io/worker: worker; an empty selector would load " +
              "the kernel module on every node",
          },
          {
            rule: `self.all(k, k.matches('${LABEL_KEY}') && k.matches('${LABEL_KEY_LENGTHS}'))`,
            message: "spec.selector keys must be label keys such as example.com/role or role: " +
              "an optional DNS subdomain prefix (at most 253 characters) and '/', then a name " +
              "of at most 63 letters, digits, '-', '_' or '.', starting and ending with a " +
              "letter or digit",
          },
          {
            // A null is refused by name by the rule every map gets (customResourceDefinition).
            rule: `self.all(k, dyn(self[k]) == null || self[k].matches('${LABEL_VALUE}'))`,
            message: "spec.selector values must be label values: at most 63 letters, " +
              "digits, '-', '_' or '.', starting and ending with a letter or digit",
          },
        ],
      },
    },
  },
  status: {
    consumers: {
      type: "array",
      items: { type: "string" },
      description: "Names of the consumer pods, sorted.",
    },
    readyConsumers: { type: "integer", description: "Consumer pods that are ready." },
    desiredConsumers: {
      type: "integer",
      description: "Consumer pods wanted: one per node that matches the selector.",
    },
    moduleLoader: nodeCountsSchema("KMM module loader"),
    devicePlugin: nodeCountsSchema("KMM device plugin"),
    conditions: CONDITIONS_SCHEMA,
  },
});

function nodeCountsSchema(what: string): Record<string, unknown> {
  return {
    type: "object",
    description: `Progress of the ${what}, as KMM reports it.`,
    properties: {
      nodesMatchingSelector: { type: "integer" },
      desired: { type: "integer" },
      available: { type: "integer" },
    },
  };
}

/**
 * v1alpha1's field names in v1beta1: one spelling each, camelCase as the API conventions ask.
 * v1alpha1's older spellings (`consumer`, `imagePullSecret`) have no v1beta1 field of their own.
 */
export const V1BETA1_FIELDS = {
  maxdev: "maxDevices",
  defaultmsg: "defaultMessage",
  consumerimage: "consumerImage",
  deviceplugin: "devicePluginImage",
  requiredDevices: "requiredDevices",
  imageRepoSecret: "imagePullSecret",
  selector: "selector",
} as const;
/** v1alpha1's older spellings, and the field each is another name for. */
export const V1ALPHA1_ALIASES = {
  consumer: "consumerimage",
  imagePullSecret: "imageRepoSecret",
} as const;

/** Where the API server reaches the conversion webhook (a Service, or a URL), and its CA. */
export interface ConversionClientConfig {
  service?: { namespace: string; name: string; path?: string; port?: number };
  url?: string;
  caBundle?: string;
}

/**
 * The CRD with v1beta1 served beside v1alpha1 (still the storage version) and converted by our
 * webhook. Without a webhook only v1alpha1 (and v1alpha) are served: `PTEMPLATE_CRD`.
 */
export function ptemplateCrdWithConversion(clientConfig: ConversionClientConfig): Unstructured {
  const crd = structuredClone(PTEMPLATE_CRD) as Unstructured & {
    spec: { versions: Record<string, unknown>[]; conversion?: unknown };
  };
  const alpha = crd.spec.versions.find((v) => v.name === PTEMPLATE.version)!;
  // Renaming field names in the schema's keys, rules, messages and columns by whole words.
  let text = JSON.stringify({ ...alpha, name: "v1beta1", storage: false });
  const schema = JSON.parse(text).schema.openAPIV3Schema;
  const spec = schema.properties.spec;
  for (const alias of Object.keys(V1ALPHA1_ALIASES)) delete spec.properties[alias];
  spec["x-kubernetes-validations"] = spec["x-kubernetes-validations"]
    .filter((rule: { message: string }) => !/not both/.test(rule.message));
  text = JSON.stringify({ ...JSON.parse(text), schema: { openAPIV3Schema: schema } });
  for (const [from, to] of Object.entries(V1BETA1_FIELDS)) {
    text = text.replace(new RegExp(`\\b${from}\\b`, "g"), to);
  }
  const beta = JSON.parse(text);
  crd.spec.versions = [...crd.spec.versions, beta];
  crd.spec.conversion = {
    strategy: "Webhook",
    webhook: { conversionReviewVersions: ["v1"], clientConfig },
  };
  return crd;
}
