/**
 * Who an operator on this runtime is: its name, API domain and version, and every name the
 * runtime derives from them wherever it names itself (the Lease, RBAC and webhook objects, the
 * labels, annotations and finalizers it puts on objects, field managers, the Event component, the
 * user agent), so that two operators in one cluster never share one. A value, passed to what
 * needs it: the runtime keeps no identity of its own in module state.
 */

/** What an operator says of itself; the rest is derived (see OperatorIdentity). */
export interface OperatorIdentityInit {
  /**
   * Its name, a DNS label of at most 56 characters (`<name>-system` must be one too): the
   * binary's help and version text, the ServiceAccount, ClusterRole, Roles and bindings, the
   * webhook configuration and Service, the Event component, the user agent, the OLM package.
   */
  name: string;
  /**
   * Its API domain, a DNS subdomain with at least one dot (`backup.example.com`): its CRDs'
   * groups are this or end in it. With the name it makes the operator's own domain,
   * `<name>.<domain>`, the default Lease and the prefix of the runtime's labels, annotations and
   * default finalizers. An organisation's operators may share a domain: the name tells them apart.
   */
  domain: string;
  /** Its version, semantic (`0.1.0`): version text, the user agent, the OLM bundle's default. */
  version: string;
  /** One line for `--help`: what it operates. Default "a Kubernetes operator". */
  description?: string;
  /**
   * Where its container images are published, without a tag (`ghcr.io/acme/backup-operator`):
   * the OLM bundle's default `--image` is `<image>:v<version>`, its bundle image
   * `<image>-bundle:v<version>`. Default the name alone, a local image: give `--image` then.
   */
  image?: string;
  /**
   * Names objects in clusters already carry from before identities were configurable, kept so
   * that an upgrade writes nothing and finalizes what it finalized before. A new operator leaves
   * this out; changing it later makes every child look foreign or unlabelled (one rewrite each).
   */
  established?: EstablishedNames;
  /**
   * Identities whose children this operator takes over: a prototype run as ptemplate-operator with
   * `--plugin` (`PTEMPLATE_OPERATOR`), or this operator under an earlier name or domain. A child
   * its parent controls that carries one of their plugin labels with the plugin's name is made
   * this operator's at its next reconcile: their field managers' field sets become its plugin's
   * (so server defaults are not foreign additions, and what they set that the plugin no longer
   * wants is removed by its next apply), their label and hash annotation are removed. See
   * runtime/reconcile/hand_over.ts for what is and is not taken over.
   */
  takesOverFrom?: readonly OperatorIdentity[];
}

/** The names of an identity whose children another takes over (see `takesOverFrom`). */
export type FormerIdentity = Pick<
  OperatorIdentity,
  "name" | "objectDomain" | "pluginLabel" | "hashAnnotation" | "bareFieldManagers"
>;

/** Names an existing operator keeps (see OperatorIdentityInit.established). */
export interface EstablishedNames {
  /** The domain of the runtime's labels, annotations and default finalizers, instead of the derived. */
  objectDomain?: string;
  /**
   * The domain of default finalizers, when earlier versions gave them another than `objectDomain`:
   * an object finalized by this version must hold a finalizer an earlier one recognises as its
   * own, or after a rollback to it the object could never be deleted.
   */
  finalizerDomain?: string;
  /**
   * Domains an earlier version gave default finalizers (`<domain>/<plugin>`): an object that holds
   * one is the plugin's, and loses it with the current one.
   */
  legacyFinalizerDomains?: string[];
  /** Field managers are the plugins' bare names, instead of `<name>/<plugin>`. */
  bareFieldManagers?: boolean;
}

/** An operator's identity with every name the runtime gives itself; made by `defineOperator`. */
export interface OperatorIdentity {
  /** Its name (see OperatorIdentityInit.name). */
  readonly name: string;
  /** Its API domain (see OperatorIdentityInit.domain). */
  readonly domain: string;
  /** Its version. */
  readonly version: string;
  /** One line for `--help`. */
  readonly description: string;
  /** Where its images are published (see OperatorIdentityInit.image). */
  readonly image: string;
  /** `<name>.<domain>`: the Lease its replicas contend for, unless `--leader-election-id` says. */
  readonly leaseName: string;
  /** `<name>-system`: the namespace its manifests install it into. */
  readonly namespace: string;
  /** `<name>/<version>`: the `User-Agent` of its requests (the audit log's `userAgent`). */
  readonly userAgent: string;
  /** `<name>.<domain>`: where its labels and annotations live (and its default finalizers). */
  readonly objectDomain: string;
  /** Where its default finalizers live: `objectDomain`, unless established otherwise. */
  readonly finalizerDomain: string;
  /** The label on every child it applies, valued with the plugin's name (pruning reads it). */
  readonly pluginLabel: string;
  /** The annotation with the hash of what was last applied to a child. */
  readonly hashAnnotation: string;
  /** Domains of earlier versions' default finalizers, still honoured. */
  readonly legacyFinalizerDomains: readonly string[];
  /** Field managers are `<name>/<plugin>` (false), or the plugins' bare names (an established operator's). */
  readonly bareFieldManagers: boolean;
  /** The identities whose children it takes over (see OperatorIdentityInit.takesOverFrom). */
  readonly formerIdentities: readonly FormerIdentity[];
}

/** The longest name: `<name>-system` is a namespace, a DNS label of 63 characters at most. */
const MAX_NAME = 56;
const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const SEMVER = /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/;

/** True when `value` is a DNS subdomain (lower-case labels joined by dots, 253 at most). */
function isSubdomain(value: string): boolean {
  return value.length <= 253 && value.split(".").every((l) => l.length <= 63 && LABEL.test(l));
}

/**
 * An operator's identity, checked: a name, domain or version that would make an invalid object
 * name, label or finalizer is refused here, naming the field and what it must be, rather than by
 * the API server on the first write.
 *
 * @example An own binary's identity (the scaffold writes it to `operator.ts`).
 * ```ts
 * import { defineOperator } from "ptemplate-operator/operator.ts";
 *
 * export const OPERATOR = defineOperator({
 *   name: "backup-operator",
 *   domain: "backup.example.com",
 *   version: "0.1.0",
 *   description: "a Kubernetes operator for Backup resources",
 * });
 * // OPERATOR.leaseName === "backup-operator.backup.example.com"
 * ```
 */
export function defineOperator(init: OperatorIdentityInit): OperatorIdentity {
  const { name, domain, version } = init;
  if (typeof name !== "string" || !LABEL.test(name) || name.length > MAX_NAME) {
    throw new TypeError(
      `operator name "${name}" must be lower-case letters, digits and dashes, at most ${MAX_NAME} ` +
        "(it names the ServiceAccount, the RBAC objects and `<name>-system`), e.g. backup-operator",
    );
  }
  if (typeof domain !== "string" || !domain.includes(".") || !isSubdomain(domain)) {
    throw new TypeError(
      `operator domain "${domain}" must be a DNS subdomain with a dot, such as ` +
        "backup.example.com (its CRDs' groups end in it)",
    );
  }
  if (typeof version !== "string" || !SEMVER.test(version)) {
    throw new TypeError(`operator version "${version}" must be a semantic version such as 0.1.0`);
  }
  const image = init.image ?? name;
  if (!/^[a-z0-9][-a-z0-9._/:]*$/.test(image) || /:[^/]*$/.test(image)) {
    throw new TypeError(
      `operator image "${image}" must be a repository without a tag or digest, such as ` +
        "ghcr.io/acme/backup-operator (the version is added as the tag)",
    );
  }
  const own = `${name}.${domain}`;
  const objectDomain = init.established?.objectDomain ?? own;
  const finalizerDomain = init.established?.finalizerDomain ?? objectDomain;
  const legacy = init.established?.legacyFinalizerDomains ?? [];
  for (const d of [own, objectDomain, finalizerDomain, ...legacy]) {
    if (!isSubdomain(d)) {
      throw new TypeError(
        `"${d}" must be a DNS subdomain of at most 253 characters (it prefixes labels and ` +
          "finalizers): shorten the operator's name or domain",
      );
    }
  }
  return Object.freeze({
    name,
    domain,
    version,
    description: init.description ?? "a Kubernetes operator",
    image,
    leaseName: own,
    namespace: `${name}-system`,
    userAgent: `${name}/${version}`,
    objectDomain,
    finalizerDomain,
    pluginLabel: `${objectDomain}/plugin`,
    hashAnnotation: `${objectDomain}/desired-hash`,
    legacyFinalizerDomains: Object.freeze([...legacy]),
    bareFieldManagers: init.established?.bareFieldManagers ?? false,
    // Not itself: what it names its own objects is never a former identity's.
    formerIdentities: Object.freeze(
      (init.takesOverFrom ?? []).filter((f) => f.objectDomain !== objectDomain).map((f) =>
        Object.freeze({
          name: f.name,
          objectDomain: f.objectDomain,
          pluginLabel: f.pluginLabel,
          hashAnnotation: f.hashAnnotation,
          bareFieldManagers: f.bareFieldManagers,
        })
      ),
    ),
  });
}

/**
 * The field manager of a plugin's writes: `<name>/<plugin>`, so that two operators with a plugin
 * of the same name never own each other's fields (an established operator's: the plugin's name).
 */
export function fieldManagerOf(
  operator: Pick<OperatorIdentity, "name" | "bareFieldManagers">,
  plugin: string,
): string {
  return operator.bareFieldManagers ? plugin : `${operator.name}/${plugin}`;
}

/**
 * What a plugin's children carry when made under a former identity: its field managers (the
 * plugin's under each former name) and the labels and annotations the runtime put there.
 */
export function formerTracesOf(
  operator: OperatorIdentity,
  plugin: string,
): { managers: ReadonlySet<string>; labels: string[]; annotations: string[] } {
  const own = fieldManagerOf(operator, plugin);
  const former = operator.formerIdentities;
  return {
    managers: new Set(former.map((f) => fieldManagerOf(f, plugin)).filter((m) => m !== own)),
    labels: former.map((f) => f.pluginLabel),
    annotations: former.map((f) => f.hashAnnotation),
  };
}

/** The finalizer a plugin puts on its objects unless it names its own: `<finalizer domain>/<plugin>`. */
export function defaultFinalizerOf(operator: OperatorIdentity, plugin: string): string {
  return `${operator.finalizerDomain}/${plugin}`;
}
