/**
 * What leader election cannot get past at start-up, said as one StartupError with the fix: no
 * permission on the Lease, a name or namespace the API server refuses, a namespace that does not
 * exist. Later the same errors are retried (RBAC may be mid-change).
 */
import { isApiError } from "../../kube/errors.ts";
import { missingRule } from "../../kube/preflight.ts";
import { StartupError } from "../../util/startup_error.ts";

/**
 * Throws a StartupError for what will not get better by retrying at start-up: no permission on
 * the lease, or no such namespace. (Later, the same is retried: RBAC may be mid-change.)
 */
export function failAtStartup(
  error: unknown,
  { namespace, name }: { namespace: string; name: string },
): void {
  if (isApiError(error, 403)) {
    throw new StartupError(
      `${error.message}; leader election needs the Lease ${namespace}/${name}: ${
        missingRule(
          "coordination.k8s.io",
          "leases",
          ["get", "create", "update", "watch"],
          namespace,
        )
      }`,
    );
  }
  if (isApiError(error, 422) || isApiError(error, 400)) {
    // A name or namespace the API server refuses: no retry can make it take it.
    throw new StartupError(
      `the API server refuses the Lease ${namespace}/${name}: ${error.message}; choose a ` +
        "valid name with --leader-election-id (a DNS subdomain) and namespace with " +
        "--leader-election-namespace",
    );
  }
  if (isApiError(error, 404) && error.details?.kind === "namespaces") {
    throw new StartupError(
      `the leader-election namespace "${namespace}" does not exist: create it (kubectl ` +
        `create namespace ${namespace}) or choose another with --leader-election-namespace`,
    );
  }
}
