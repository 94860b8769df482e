/**
 * What `kubectl apply` of a Ptemplate is told before anything breaks, as admission warnings: the
 * namespace's Pod Security level will refuse the privileged consumer pods; the pull secret does
 * not exist; a child's name is taken by an object we do not control. CEL sees one object alone;
 * these need the cluster. Nothing is refused here: each of these can be put right after the
 * Ptemplate is made, and the schema refuses what never works.
 *
 * Whoever reaches the webhook can post a review, so a warning must not tell them what they could
 * not read themselves. Each fact is looked at only in the request's own namespace (the Namespace,
 * the Secret and the children the Ptemplate names there), and only when the review's requester
 * may read it (a SubjectAccessReview, cached); otherwise it is skipped, and the answer is the same
 * whether the object exists or not. Nodes are cluster-scoped and not looked at (the status says
 * `NoMatchingNodes` once the Ptemplate exists). Modules and DaemonSets come from the cache; the
 * Namespace and the Secret through admission's own rate-limited client, 2 s at most each.
 */
import {
  type AdmissionContext,
  type AdmissionRequest,
  type AdmissionVerdict,
  childProblem,
  DAEMON_SET,
  isApiError,
  NAMESPACE,
  objectRef,
  type PluginSpec,
  type Resource,
  SECRET,
} from "../mod.ts";
import { MODULE } from "../crds/kmm_module.ts";
import { effectiveSpec, PTEMPLATE, type Ptemplate } from "../crds/ptemplate.ts";
import { consumerDaemonSetName } from "./consumer_daemonset.ts";

const PSA_ENFORCE = "pod-security.kubernetes.io/enforce";

/** What the warnings read from the API server: the namespace and the pull secret (children: the cache). */
export const PTEMPLATE_ADMISSION_READS: NonNullable<PluginSpec["admissionReads"]> = [
  { resource: NAMESPACE, verbs: ["get"] },
  { resource: SECRET, verbs: ["get"] },
];

/**
 * What the warnings are made from; `undefined` where we did not look (the requester may not read
 * it, or the API server did not answer).
 */
export interface AdmissionFacts {
  /** The namespace's enforced Pod Security level. */
  podSecurity?: string;
  /** Whether the pull secret exists. */
  secretExists?: boolean;
  /** Children's names in use by objects this Ptemplate does not control: what to do, in words. */
  taken: string[];
}

/** The warnings for a Ptemplate, given the facts. */
export function ptemplateWarnings(pt: Ptemplate, facts: AdmissionFacts): string[] {
  const namespace = pt.metadata?.namespace;
  const spec = effectiveSpec(pt.spec);
  const warnings: string[] = [];
  if (facts.podSecurity === "restricted" || facts.podSecurity === "baseline") {
    warnings.push(
      `namespace ${namespace} enforces Pod Security "${facts.podSecurity}", which refuses the ` +
        `privileged consumer pods (they mount /dev from the host): label the namespace ` +
        `${PSA_ENFORCE}=privileged, or make the Ptemplate in a namespace that allows it`,
    );
  }
  if (spec.pullSecret && facts.secretExists === false) {
    const field = pt.spec.imagePullSecret ? "spec.imagePullSecret" : "spec.imageRepoSecret";
    warnings.push(
      `${field}: Secret "${spec.pullSecret}" does not exist in namespace ${namespace}; create it ` +
        `(kubectl create secret docker-registry ${spec.pullSecret} -n ${namespace} …) or the ` +
        `module and consumer images cannot be pulled`,
    );
  }
  return [...warnings, ...facts.taken];
}

/** Looks at what the requester may read, in the request's namespace, each within 2 s. */
async function factsFor(
  pt: Ptemplate,
  { namespace, name }: { namespace: string; name: string },
  context: AdmissionContext,
): Promise<AdmissionFacts> {
  // A deadline per read, its timer cleared with the answer: an AbortSignal.timeout per review
  // would outlive each review by its 2 s, and reviews come as fast as anyone sends them.
  const timeoutMs = 2_000;
  const spec = effectiveSpec(pt.spec);
  const may = (resource: Resource, object: string) =>
    context.requesterMay("get", resource, { namespace, name: object });
  const read = async <T>(resource: Resource, object: string, look: () => Promise<T>) =>
    await may(resource, object) ? await look() : undefined;
  const client = context.client;
  const [ns, secretExists, module, daemonSet] = await Promise.all([
    read(
      NAMESPACE,
      namespace,
      () => client.get(NAMESPACE, namespace, { timeoutMs }).catch(() => undefined),
    ),
    spec.pullSecret
      ? read(
        SECRET,
        spec.pullSecret,
        () =>
          client.get(SECRET, spec.pullSecret!, { namespace, timeoutMs }).then(
            () => true,
            (error) => isApiError(error, 404) ? false : undefined,
          ),
      )
      : undefined,
    context.installed(MODULE)
      ? read(MODULE, name, () => Promise.resolve(context.cache(MODULE).get(namespace, name)))
      : undefined,
    read(
      DAEMON_SET,
      consumerDaemonSetName({ metadata: { name } }),
      () =>
        Promise.resolve(
          context.cache(DAEMON_SET).get(namespace, consumerDaemonSetName({ metadata: { name } })),
        ),
    ),
  ]);
  // The ownership rule the operator writes by: before the Ptemplate exists it has no uid, and
  // its kind and name decide.
  const parent = objectRef(PTEMPLATE, { metadata: { ...pt.metadata, namespace } });
  const taken = [
    childProblem("admission", MODULE, module, parent),
    childProblem("admission", DAEMON_SET, daemonSet, parent),
  ].flatMap((problem) => problem ? [problem.message] : []);
  return { podSecurity: ns?.metadata?.labels?.[PSA_ENFORCE], secretExists, taken };
}

/** The Ptemplate's validating admission: warnings on create and update, never a refusal. */
export async function validatePtemplate(
  request: AdmissionRequest<Ptemplate>,
  context: AdmissionContext,
): Promise<AdmissionVerdict> {
  if (request.operation !== "CREATE" && request.operation !== "UPDATE") return {};
  const pt = request.object;
  // The request's namespace, which the object's (when it has one) was checked to be.
  const namespace = request.namespace;
  if (!namespace || !pt?.metadata?.name || !pt.spec?.selector) return {};
  const named = { ...pt, metadata: { ...pt.metadata, namespace } };
  const facts = await factsFor(named, { namespace, name: pt.metadata.name }, context);
  return { warnings: ptemplateWarnings(named, facts) };
}
