/**
 * The RBAC rules a set of plugins needs, derived from what they declare: `for` and `watches` are
 * listed and watched, `owns` also created, patched (server-side apply) and deleted (prune), a
 * status is patched unless `writesStatus: false`, a `finalize` patches its kind's finalizers, and
 * `permissions` adds what a plugin asks of `context.client` itself. Every plugin may record Events.
 * With `webhooks`, what admission reads too (`"only"`: nothing else). Nothing else: what the
 * operator does is what it may do.
 */
import { EVENT } from "../kube/kinds.ts";
import type { Resource } from "../kube/resource.ts";
import { ownedKinds, type PluginSpec, type Verb } from "./plugin/mod.ts";

/** One rule of a ClusterRole or Role. */
export interface PolicyRule {
  /** The API groups of `resources` (`""` for the core group). */
  apiGroups: string[];
  /** Resources by their plural, with a subresource after a slash (`ptemplates/status`). */
  resources: string[];
  /** Only these objects (never with `create`, which has no name to check yet). */
  resourceNames?: string[];
  /** What may be done to them. */
  verbs: Verb[];
}

const VERB_ORDER: Verb[] = ["get", "list", "watch", "create", "update", "patch", "delete"];

/** The Lease the replicas elect a leader on, in the operator's own namespace. */
export const LEADER_ELECTION_RULES: PolicyRule[] = [
  {
    apiGroups: ["coordination.k8s.io"],
    resources: ["leases"],
    verbs: ["get", "create", "update", "watch"],
  },
];

/**
 * What a ring of shards (`--shards`) needs beyond leader election, in the same namespace: each
 * replica lists the ring's Leases by their label (then watches them), deletes its own member
 * Lease as it leaves, and those a crashed replica or a larger ring left. Granted by
 * `deploy/shards` only: a single leader never uses it.
 */
export const SHARD_RING_RULES: PolicyRule[] = [
  { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["list", "delete"] },
];
/**
 * What serving `/metrics` securely needs: asking the API server who a caller's token belongs to
 * (TokenReview) and whether they may get the path (SubjectAccessReview); admission asks the
 * latter about a review's requester. Cluster-scoped by nature (no Role can grant it), and it
 * grants no access to any object.
 */
export const ACCESS_REVIEW_RULES: PolicyRule[] = [
  { apiGroups: ["authentication.k8s.io"], resources: ["tokenreviews"], verbs: ["create"] },
  { apiGroups: ["authorization.k8s.io"], resources: ["subjectaccessreviews"], verbs: ["create"] },
];

/** What of a plugin's spec its RBAC rules are derived from. */
export type Declaring = Pick<
  PluginSpec,
  "for" | "owns" | "watches" | "writesStatus" | "finalize" | "permissions" | "admissionReads"
>;

/**
 * The rules `plugins` need. `namespaced`: for Roles in the watched namespaces, where
 * cluster-scoped kinds cannot be granted (the runtime does not watch optional ones there; a
 * required one is an error).
 */
export function rbacRules(
  plugins: Declaring[],
  options: {
    namespaced?: boolean;
    /** With `namespaced`: leave required cluster-scoped kinds out (granted elsewhere) too. */
    omitClusterScoped?: boolean;
    webhooks?: boolean | "only";
  } = {},
): PolicyRule[] {
  const only = options.webhooks === "only";
  const grants = new Map<string, Set<Verb>>();
  const grant = (resource: Resource, verbs: Verb[], subresource?: string, optional = false) => {
    if (options.namespaced && !resource.namespaced) {
      if (optional || options.omitClusterScoped) return;
      throw new TypeError(
        `${resource.kind} is cluster-scoped: a namespaced install cannot grant it (make its watch optional)`,
      );
    }
    const key = `${resource.group}|${resource.plural}${subresource ? `/${subresource}` : ""}`;
    const set = grants.get(key) ?? new Set<Verb>();
    for (const verb of verbs) set.add(verb);
    grants.set(key, set);
  };
  for (const plugin of plugins.filter(() => !only)) {
    grant(plugin.for, ["list", "watch"]);
    if (plugin.writesStatus !== false) grant(plugin.for, ["patch"], "status");
    if (plugin.finalize) grant(plugin.for, ["patch"]);
    for (const { resource } of ownedKinds(plugin)) {
      grant(resource, ["list", "watch", "create", "patch", "delete"]);
    }
    for (const watch of plugin.watches ?? []) {
      grant(watch.resource, ["list", "watch"], undefined, watch.optional);
    }
    for (const permission of plugin.permissions ?? []) {
      grant(permission.resource, permission.verbs, permission.subresource);
    }
  }
  for (const plugin of options.webhooks ? plugins : []) {
    for (const permission of plugin.admissionReads ?? []) {
      // Admission looks where it may: a namespaced install does without cluster-scoped reads.
      grant(permission.resource, permission.verbs, permission.subresource, true);
    }
  }
  if (plugins.length && !only) grant(EVENT, ["create", "patch"]);
  // One rule per API group and set of verbs, in a stable order.
  const rules = new Map<string, PolicyRule>();
  for (const key of [...grants.keys()].sort()) {
    const [group, resource] = key.split("|");
    const verbs = VERB_ORDER.filter((v) => grants.get(key)!.has(v));
    const id = `${group}|${verbs.join(",")}`;
    const rule = rules.get(id) ?? { apiGroups: [group], resources: [], verbs };
    rule.resources.push(resource);
    rules.set(id, rule);
  }
  return [...rules.values()];
}

/** "group resource verb" for every permission `rules` grant: to compare rule sets however written. */
export function grantsOf(rules: PolicyRule[]): string[] {
  return [
    ...new Set(
      rules.flatMap((r) =>
        r.apiGroups.flatMap((g) =>
          r.resources.flatMap((res) => r.verbs.map((v) => `${g} ${res} ${v}`))
        )
      ),
    ),
  ].sort();
}

/**
 * What self-managed webhook certificates need beyond the plugins: the Secret in the operator's
 * namespace (a Role), and the caBundle of our own webhook configurations and CRDs (by name).
 */
export function selfManagedCertificateRules(
  options: { secretName: string; webhookConfiguration: string; crds: string[] },
): {
  namespaced: PolicyRule[];
  cluster: PolicyRule[];
} {
  return {
    namespaced: [
      { apiGroups: [""], resources: ["secrets"], verbs: ["create"] },
      {
        apiGroups: [""],
        resources: ["secrets"],
        resourceNames: [options.secretName],
        verbs: ["get", "patch"],
      },
    ],
    cluster: [
      {
        apiGroups: ["admissionregistration.k8s.io"],
        resources: ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"],
        resourceNames: [options.webhookConfiguration],
        verbs: ["get", "patch"],
      },
      // No names would mean every CRD: the rule goes when there is no conversion to keep.
      ...(options.crds.length
        ? [{
          apiGroups: ["apiextensions.k8s.io"],
          resources: ["customresourcedefinitions"],
          resourceNames: options.crds,
          verbs: ["get" as const, "patch" as const],
        }]
        : []),
    ],
  };
}
