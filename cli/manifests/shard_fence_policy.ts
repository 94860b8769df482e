/**
 * The shard fence on the API server's side: a ValidatingAdmissionPolicy that refuses a write to a
 * child of a ring's parent by one of the operator's pods unless that pod holds the Lease of the
 * child's shard. What the leader fence (leader_fence_policy.ts) is to one leader, per shard.
 *
 * A child carries its parent's bucket in a label (runtime/shards), and the ring's Leases its size
 * N (an annotation) and their shard (the name's `-shard-<i>`): so the API server can tell which
 * shard a child is of, and who holds it now, with no hash of its own. The binding selects every
 * Lease of the ring; the API server checks each, and the one of the child's shard decides.
 *
 * Not fenced: a parent's status, which carries no bucket (its shard is a hash of its uid that CEL
 * cannot compute; a stale one that lands is a change its holder sees and writes again), the
 * Events, and what the leader fence does not fence either. An unheld shard Lease (handed over, or
 * released by a clean shutdown) and a missing one let every replica through, as the leader fence
 * does: a fence must never lock out a ring that is starting. A Lease past the ring's size that a
 * larger ring's crashed replica left held, the ring deletes (runtime/shards/shard_ring.ts).
 */
import type { Unstructured } from "../../kube/mod.ts";
import { BUCKETS } from "../../kube/shard_range.ts";
import { type OperatorIdentity, PTEMPLATE_OPERATOR } from "../../runtime/mod.ts";
import { ringLabelValue, shardLeasePrefix, shardNames } from "../../runtime/shards/mod.ts";
import { operatorPodWrites } from "./leader_fence_policy.ts";
import { serviceAccountOf } from "./rbac_manifests.ts";

/** Whose writes are fenced and by which ring; defaults are the operator's own. */
export interface ShardFenceOptions {
  /** The operator; default ptemplate-operator. */
  operator?: OperatorIdentity;
  /** The writers: the operator's ServiceAccount. */
  serviceAccount?: { name: string; namespace: string };
  /** The ring: its name (`--leader-election-id`, `<name>.<domain>`) and namespace. */
  ring?: { name: string; namespace: string };
}

/** The policy and its binding; `<name>-shard-fence` both. */
export function shardFencePolicy(options: ShardFenceOptions = {}): Unstructured[] {
  const operator = options.operator ?? PTEMPLATE_OPERATOR;
  const account = options.serviceAccount ?? serviceAccountOf(operator);
  const ring = options.ring ?? { name: operator.leaseName, namespace: operator.namespace };
  const names = shardNames(operator.objectDomain);
  const name = `${operator.name}-shard-fence`;
  const admission = "admissionregistration.k8s.io/v1";
  const writes = operatorPodWrites(account);
  const prefix = shardLeasePrefix(ring.name);
  // The child's bucket: of the object written, or of the one deleted (or relabelled).
  const bucketOf = (object: string) =>
    `${object} != null && has(${object}.metadata.labels) && ` +
    `'${names.bucketLabel}' in ${object}.metadata.labels ? ` +
    `${object}.metadata.labels['${names.bucketLabel}'] : ''`;
  const hex = "'0123456789abcdef'";
  return [{
    apiVersion: admission,
    kind: "ValidatingAdmissionPolicy",
    metadata: { name },
    spec: {
      failurePolicy: "Fail",
      paramKind: { apiVersion: "coordination.k8s.io/v1", kind: "Lease" },
      matchConstraints: writes.matchConstraints,
      matchConditions: [writes.podCondition],
      variables: [
        writes.pod,
        { name: "newLabel", expression: bucketOf("object") },
        { name: "oldLabel", expression: bucketOf("oldObject") },
        {
          name: "label",
          expression: "variables.newLabel != '' ? variables.newLabel : variables.oldLabel",
        },
        // -1 where the label is absent or not two hex digits: not a child of a ring.
        {
          name: "bucket",
          expression: `variables.label.matches('^[0-9a-f]{2}$') ? ` +
            `${hex}.indexOf(variables.label.charAt(0)) * 16 + ` +
            `${hex}.indexOf(variables.label.charAt(1)) : -1`,
        },
        // The shard this Lease is of (-1 for a member's Lease), and the ring's size on it.
        {
          name: "index",
          expression: `params.metadata.name.startsWith('${prefix}') && ` +
            `params.metadata.name.substring(${prefix.length}).matches('^[0-9]{1,3}$') ? ` +
            `int(params.metadata.name.substring(${prefix.length})) : -1`,
        },
        {
          name: "count",
          expression: `has(params.metadata.annotations) && ` +
            `'${names.countAnnotation}' in params.metadata.annotations && ` +
            `params.metadata.annotations['${names.countAnnotation}'].matches('^[0-9]{1,3}$') ? ` +
            `int(params.metadata.annotations['${names.countAnnotation}']) : 0`,
        },
        // kube/shard_range.ts's shardOfBucket: shard i of n holds [⌊i·256/n⌋, ⌊(i+1)·256/n⌋).
        {
          name: "shard",
          expression: `variables.bucket >= 0 && variables.count > 0 ? ` +
            `((variables.bucket + 1) * variables.count - 1) / ${BUCKETS} : -1`,
        },
        {
          name: "holder",
          expression: "has(params.spec.holderIdentity) ? params.spec.holderIdentity : ''",
        },
      ],
      validations: [{
        expression: "variables.shard < 0 || variables.shard != variables.index || " +
          "variables.holder == '' || variables.holder.startsWith(variables.pod + '_')",
        messageExpression: `'pod ' + variables.pod + ' does not hold the Lease ` +
          `${ring.namespace}/' + params.metadata.name + ' (' + variables.holder + ' does) of ` +
          `shard ' + string(variables.shard) + ' of ' + string(variables.count) + ', which ` +
          `this object is of (bucket ' + variables.label + '): only the holder of a shard ` +
          `writes, and this replica lost it (frozen or cut off)'`,
        reason: "Forbidden",
      }],
    },
  }, {
    apiVersion: admission,
    kind: "ValidatingAdmissionPolicyBinding",
    metadata: { name },
    spec: {
      policyName: name,
      validationActions: ["Deny"],
      paramRef: {
        namespace: ring.namespace,
        selector: { matchLabels: { [names.ringLabel]: ringLabelValue(ring.name) } },
        parameterNotFoundAction: "Allow",
      },
    },
  }];
}
