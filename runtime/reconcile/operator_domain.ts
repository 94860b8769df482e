/**
 * The runtime's own names on objects (the label that says which plugin made a child, the
 * annotation holding the hash of what was applied, the default finalizer), under one domain, in
 * one place, so that an own binary can be given its own (issue 24). Names earlier versions wrote
 * are recognised where objects in clusters still carry them.
 */

/** The domain of the runtime's own labels, annotations and default finalizers. */
export const OPERATOR_DOMAIN = "operator.ptemplate.dev";

/** Label on every child the runtime applies: which plugin made it (pruning looks only at those). */
export const PLUGIN_LABEL = `${OPERATOR_DOMAIN}/plugin`;

/** Annotation holding the hash of what was last applied, so removed fields are noticed too. */
export const HASH_ANNOTATION = `${OPERATOR_DOMAIN}/desired-hash`;

/**
 * Label on every child when replicas split the keys (`--shards`): its parent's bucket (two hex
 * digits, the top byte of the hash of the parent's uid), by which each replica asks the API
 * server for its shards' children.
 */
export const SHARD_BUCKET_LABEL = `${OPERATOR_DOMAIN}/shard-bucket`;

/** Label on every Lease of a ring of shards: the ring's name. */
export const SHARD_RING_LABEL = `${OPERATOR_DOMAIN}/shard-ring`;

/** Annotation on every Lease of a ring: its size, N, which every replica must agree on. */
export const SHARD_COUNT_ANNOTATION = `${OPERATOR_DOMAIN}/shards`;

/**
 * The domain 0.2 and earlier gave default finalizers. Objects in clusters may still hold such a
 * finalizer: it is ours, is honoured as the current one, and removed with it.
 */
export const LEGACY_FINALIZER_DOMAIN = "operator.pt.example.com";

/** The finalizer a plugin puts on its objects: its own, or `<domain>/<plugin name>`. */
export function defaultFinalizer(plugin: string): string {
  return `${OPERATOR_DOMAIN}/${plugin}`;
}

/** Finalizers earlier versions put on a plugin's objects that are still the plugin's. */
export function legacyFinalizers(plugin: { name: string; finalizer?: string }): string[] {
  return plugin.finalizer === undefined ? [`${LEGACY_FINALIZER_DOMAIN}/${plugin.name}`] : [];
}
