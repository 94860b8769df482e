/**
 * How `run` watches the kinds of a namespaced install: once per kind and namespace (all that
 * Roles allow), or, above ACROSS_NAMESPACES_ABOVE namespaces and for each kind the operator may
 * list and watch in every namespace, once across all namespaces, keeping what is in those
 * listed. Each watch holds memory of its own, most of it Deno's stream, so the first way costs in
 * proportion to namespaces times kinds and the second what all namespaces cost (bench/README.md,
 * "Many namespaces: `deno task bench:namespaces`"); the price of watching across is reading every
 * namespace's objects of the kind as they change (what is not listed is dropped as it arrives).
 */
import type { KubeClient, KubeObject, Resource } from "../kube/mod.ts";
import { type Logger, ownedKinds, type Plugin, resourceId } from "../runtime/mod.ts";

/** Above this many namespaces, a kind the operator may read everywhere is watched across them. */
export const ACROSS_NAMESPACES_ABOVE = 10;

const SELF_SUBJECT_ACCESS_REVIEW: Resource<KubeObject> = {
  group: "authorization.k8s.io",
  version: "v1",
  kind: "SelfSubjectAccessReview",
  plural: "selfsubjectaccessreviews",
  namespaced: false,
};

/**
 * The kinds `plugins` read to watch across all namespaces rather than in each of `namespaces`:
 * none up to ACROSS_NAMESPACES_ABOVE namespaces; above, those the API server says the operator
 * may list and watch cluster-wide (asked once each, now). Says which in one line.
 */
export async function acrossNamespaces(
  client: KubeClient,
  plugins: readonly Plugin[],
  namespaces: readonly string[],
  log: Logger,
): Promise<(resource: Resource) => boolean> {
  if (namespaces.length <= ACROSS_NAMESPACES_ABOVE) return () => false;
  const kinds = new Map<string, Resource>();
  for (const plugin of plugins) {
    const read = [
      plugin.for,
      ...ownedKinds(plugin).map((o) => o.resource),
      ...(plugin.watches ?? []).map((w) => w.resource),
    ];
    for (const resource of read) if (resource.namespaced) kinds.set(resourceId(resource), resource);
  }
  const across = new Set<string>();
  await Promise.all([...kinds].map(async ([id, resource]) => {
    const verbs = await Promise.all(
      ["list", "watch"].map((verb) => mayEverywhere(client, resource, verb)),
    );
    if (verbs.every(Boolean)) across.add(id);
  }));
  const named = (ids: Iterable<string>) =>
    [...new Set([...ids].map((id) => kinds.get(id)!.kind))].sort().join(", ");
  const each = [...kinds.keys()].filter((id) => !across.has(id));
  log.info(
    "{count} namespaces: {across} watched across all namespaces (allowed everywhere), {each} " +
      "in each",
    {
      count: namespaces.length,
      across: named(across) || "no kind",
      each: named(each) || "no kind",
    },
  );
  return (resource) => across.has(resourceId(resource));
}

/** Whether the API server says we may `verb` `resource` in every namespace (no: when unsure). */
async function mayEverywhere(
  client: KubeClient,
  resource: Resource,
  verb: string,
): Promise<boolean> {
  try {
    const review = await client.create(SELF_SUBJECT_ACCESS_REVIEW, {
      spec: {
        resourceAttributes: { verb, group: resource.group, resource: resource.plural },
      },
    } as KubeObject) as { status?: { allowed?: boolean } };
    return review.status?.allowed === true;
  } catch {
    return false;
  }
}
