/**
 * What `kubectl apply` of a Ptemplate is told before anything breaks, as admission warnings: the
 * namespace's Pod Security level will refuse the privileged consumer pods; the pull secret does
 * not exist; no node matches the selector; a child's name is taken by an object we do not
 * control. CEL sees one object alone; these need the cluster. Nothing is refused here: each of
 * these can be put right after the Ptemplate is made, and the schema refuses what never works.
 */
import {
  type AdmissionContext,
  type AdmissionRequest,
  type AdmissionVerdict,
  controllerOf,
  DAEMON_SET,
  isApiError,
  type KubeObject,
  NAMESPACE,
  NODE,
  type Permission,
  SECRET,
} from "../mod.ts";
import { MODULE } from "../crds/kmm_module.ts";
import { effectiveSpec, PTEMPLATE, type Ptemplate } from "../crds/ptemplate.ts";
import { consumerDaemonSetName } from "./consumer_daemonset.ts";

const PSA_ENFORCE = "pod-security.kubernetes.io/enforce";

/** What the warnings read: the namespace, the pull secret, nodes, and the children by name. */
export const PTEMPLATE_ADMISSION_READS: Permission[] = [
  { resource: NAMESPACE, verbs: ["get"] },
  { resource: SECRET, verbs: ["get"] },
  { resource: NODE, verbs: ["list"] },
  { resource: MODULE, verbs: ["get"] },
  { resource: DAEMON_SET, verbs: ["get"] },
];

/** What the warnings are made from; `undefined` where we could not look (no permission, say). */
export interface AdmissionFacts {
  /** The namespace's enforced Pod Security level. */
  podSecurity?: string;
  /** Whether the pull secret exists. */
  secretExists?: boolean;
  /** Nodes with every label of the selector (0 or more; at most 1 is looked for). */
  matchingNodes?: number;
  /** Children's names in use by objects this Ptemplate does not control. */
  taken: { kind: string; name: string; controller?: string }[];
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
  if (facts.matchingNodes === 0) {
    const labels = Object.entries(spec.selector).map(([k, v]) => `${k}=${v}`).join(",");
    warnings.push(
      `spec.selector: no node has the labels ${labels}: label nodes ` +
        `(kubectl label node <node> ${labels}) or change spec.selector; until then nothing runs`,
    );
  }
  for (const { kind, name, controller } of facts.taken) {
    warnings.push(
      `${kind} ${namespace}/${name} already exists and ${
        controller ? `is controlled by ${controller}` : "is not controlled by this Ptemplate"
      }: it is left alone and this Ptemplate gets no ${kind}; delete or rename it`,
    );
  }
  return warnings;
}

/** Looks at the cluster for the facts, each read on its own and none for longer than 2 s. */
async function factsFor(pt: Ptemplate, context: AdmissionContext): Promise<AdmissionFacts> {
  const signal = AbortSignal.timeout(2_000);
  const namespace = pt.metadata!.namespace!;
  const spec = effectiveSpec(pt.spec);
  const quietly = <T>(read: Promise<T>) => read.then((v) => v, () => undefined);
  const exists = (read: Promise<unknown>) =>
    read.then(() => true, (error) => isApiError(error, 404) ? false : undefined);
  const labels = Object.entries(spec.selector).map(([k, v]) => `${k}=${v}`).join(",");
  const client = context.client;
  const [ns, secretExists, nodes, module, daemonSet] = await Promise.all([
    quietly(client.get(NAMESPACE, namespace, { signal })),
    spec.pullSecret
      ? exists(client.get(SECRET, spec.pullSecret, { namespace, signal }))
      : Promise.resolve(undefined),
    labels ? quietly(client.list(NODE, { labelSelector: labels, limit: 1, signal })) : undefined,
    context.installed(MODULE)
      ? quietly(client.get(MODULE, pt.metadata!.name!, { namespace, signal }))
      : undefined,
    quietly(client.get(DAEMON_SET, consumerDaemonSetName(pt), { namespace, signal })),
  ]);
  const taken: AdmissionFacts["taken"] = [];
  for (const [kind, child] of [["Module", module], ["DaemonSet", daemonSet]] as const) {
    if (!child) continue;
    const owner = controllerOf(child as KubeObject);
    const ours = owner?.kind === PTEMPLATE.kind && owner.name === pt.metadata?.name &&
      (!pt.metadata?.uid || owner.uid === pt.metadata.uid);
    if (!ours) {
      taken.push({
        kind,
        name: child.metadata!.name!,
        controller: owner ? `${owner.kind} ${owner.name}` : undefined,
      });
    }
  }
  return {
    podSecurity: ns?.metadata?.labels?.[PSA_ENFORCE],
    secretExists,
    matchingNodes: nodes?.items.length,
    taken,
  };
}

/** The Ptemplate's validating admission: warnings on create and update, never a refusal. */
export async function validatePtemplate(
  request: AdmissionRequest<Ptemplate>,
  context: AdmissionContext,
): Promise<AdmissionVerdict> {
  if (request.operation !== "CREATE" && request.operation !== "UPDATE") return {};
  const pt = request.object;
  if (!pt?.metadata?.namespace || !pt.spec?.selector) return {};
  return { warnings: ptemplateWarnings(pt, await factsFor(pt, context)) };
}
