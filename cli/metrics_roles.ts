/**
 * The names of the RBAC objects for /metrics: the ClusterRole the operator needs to review who
 * asks, and the one a reader is bound to. Apart from the manifests (and their YAML), since `run`
 * needs only the names.
 */
import type { OperatorIdentity } from "../runtime/mod.ts";

/** The names of the RBAC objects for /metrics: what the operator asks, and what readers get. */
export function metricsRoles(operator: OperatorIdentity): { auth: string; reader: string } {
  return { auth: `${operator.name}-metrics-auth`, reader: `${operator.name}-metrics-reader` };
}
