/**
 * The leader fence on the API server's side: a ValidatingAdmissionPolicy that refuses a write by
 * one of the operator's pods unless that pod holds the leader's Lease.
 *
 * The operator's own fence (kube/write_fence.ts) stops a write before it is handed to the HTTP
 * client; it cannot stop one already handed over when the process froze (SIGSTOP, a VM pause):
 * that request leaves as the process wakes, after a standby has taken over. Only the API server
 * can refuse it, and it can tell the writer apart: a pod's bound ServiceAccount token names the
 * pod (`authentication.kubernetes.io/pod-name` in the user's extra), and the leader's identity
 * begins with its pod's name (`<POD_NAME>_<random>`, runtime/leader). The Lease is the policy's
 * parameter, so the check reads the holder the API server has now, not the one the writer saw.
 *
 * Not fenced: what every replica writes (Leases, access reviews, the webhook's serving certificate
 * and caBundles), and callers that are not the operator's pods (a person's kubeconfig, a
 * workstation run). An unheld Lease (released by a clean shutdown) lets every replica through, as
 * does a missing one: a fence must never lock out an operator run without leader election or
 * with another `--leader-election-id`. With `--shards` there is no one leader; deploy/shards
 * installs the shard fence instead (shard_fence_policy.ts).
 */
import type { Unstructured } from "../../kube/mod.ts";
import { type OperatorIdentity, PTEMPLATE_OPERATOR } from "../../runtime/mod.ts";
import { serviceAccountOf } from "./rbac_manifests.ts";
import { webhookNames } from "./webhook_manifests.ts";

/** Whose writes are fenced and by which Lease; defaults are the operator's own. */
export interface LeaderFenceOptions {
  /** The operator; default ptemplate-operator. */
  operator?: OperatorIdentity;
  /** The writers: the operator's ServiceAccount. */
  serviceAccount?: { name: string; namespace: string };
  /** The leader's Lease: `<name>.<domain>` in the operator's namespace. */
  lease?: { name: string; namespace: string };
  /** Secrets in the Lease's namespace every replica writes: the webhook's serving certificate. */
  replicaSecrets?: string[];
}

/** The user-info key the API server fills from a pod-bound ServiceAccount token. */
const POD_NAME_EXTRA = "authentication.kubernetes.io/pod-name";

const rule = (group: string, resources: string[]) => ({
  apiGroups: [group],
  apiVersions: ["*"],
  operations: ["*"],
  resources,
});

/**
 * What a fence looks at: every write (a subresource's too) by one of `account`'s pods, but for
 * what every replica writes (Leases, access reviews) and the cluster's own setup.
 */
export function operatorPodWrites(account: { name: string; namespace: string }): {
  matchConstraints: Record<string, unknown>;
  podCondition: { name: string; expression: string };
  pod: { name: string; expression: string };
} {
  return {
    matchConstraints: {
      resourceRules: [{
        apiGroups: ["*"],
        apiVersions: ["*"],
        operations: ["CREATE", "UPDATE", "DELETE"],
        resources: ["*/*"], // every resource and subresource (a status too)
      }],
      excludeResourceRules: [
        rule("coordination.k8s.io", ["leases"]),
        rule("authentication.k8s.io", ["*"]),
        rule("authorization.k8s.io", ["*"]),
        rule("apiextensions.k8s.io", ["customresourcedefinitions"]),
        rule("admissionregistration.k8s.io", ["*"]),
      ],
    },
    podCondition: {
      name: "a-pod-of-the-operator",
      expression:
        `request.userInfo.username == 'system:serviceaccount:${account.namespace}:${account.name}'` +
        ` && has(request.userInfo.extra) && '${POD_NAME_EXTRA}' in request.userInfo.extra`,
    },
    pod: { name: "pod", expression: `request.userInfo.extra['${POD_NAME_EXTRA}'][0]` },
  };
}

/** The policy and its binding; `<name>-leader-fence` both. */
export function leaderFencePolicy(options: LeaderFenceOptions = {}): Unstructured[] {
  const operator = options.operator ?? PTEMPLATE_OPERATOR;
  const account = options.serviceAccount ?? serviceAccountOf(operator);
  const lease = options.lease ?? { name: operator.leaseName, namespace: operator.namespace };
  const secrets = options.replicaSecrets ?? [webhookNames(operator).secret];
  const name = `${operator.name}-leader-fence`;
  const writes = operatorPodWrites(account);
  const admission = "admissionregistration.k8s.io/v1";
  const quoted = (values: string[]) => `[${values.map((v) => `'${v}'`).join(", ")}]`;
  return [{
    apiVersion: admission,
    kind: "ValidatingAdmissionPolicy",
    metadata: { name },
    spec: {
      failurePolicy: "Fail",
      paramKind: { apiVersion: "coordination.k8s.io/v1", kind: "Lease" },
      matchConstraints: writes.matchConstraints,
      matchConditions: [writes.podCondition, {
        name: "not-a-secret-every-replica-writes",
        expression: `!(request.resource.group == '' && request.resource.resource == 'secrets' && ` +
          `request.namespace == '${lease.namespace}' && request.name in ${quoted(secrets)})`,
      }],
      variables: [
        writes.pod,
        {
          name: "holder",
          expression: "has(params.spec.holderIdentity) ? params.spec.holderIdentity : ''",
        },
      ],
      validations: [{
        expression: "variables.holder == '' || variables.holder.startsWith(variables.pod + '_')",
        messageExpression: `'pod ' + variables.pod + ' does not hold the Lease ` +
          `${lease.namespace}/${lease.name} (' + variables.holder + ' does): only the leader ` +
          `writes, and this replica lost the lease (frozen or cut off)'`,
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
        name: lease.name,
        namespace: lease.namespace,
        parameterNotFoundAction: "Allow",
      },
    },
  }];
}
