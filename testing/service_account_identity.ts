/** Identities for tests: ServiceAccount tokens minted through the TokenRequest API, and admin rights. */
import type { ClusterConfig } from "../kube/cluster_config.ts";
import type { KubeClient } from "../kube/client.ts";
import { isApiError } from "../kube/errors.ts";
import { CLUSTER_ROLE_BINDING, NAMESPACE, POD, SERVICE_ACCOUNT } from "../kube/kinds.ts";
import { kubeconfigYaml } from "../kube/kubeconfig_yaml.ts";
import type { KubeObject } from "../kube/object.ts";
import type { Resource } from "../kube/resource.ts";

/** A ServiceAccount identity minted through the TokenRequest API. */
export interface ServiceAccountIdentity {
  /** The ServiceAccount's namespace. */
  namespace: string;
  /** The ServiceAccount's name. */
  name: string;
  /** The minted bearer token. */
  token: string;
  /** A cluster config that authenticates with the token, trusting the plane's CA. */
  config: ClusterConfig;
  /** A kubeconfig file for it, in the plane's folder: `kubectl --kubeconfig <this>`. */
  kubeconfigPath: string;
  /** `system:serviceaccount:<namespace>:<name>`, for RBAC subjects. */
  username: string;
}

/**
 * Creates (if needed) a ServiceAccount and mints a token for it through the TokenRequest API,
 * with no RBAC of its own: grant it what a test needs. With `pod`, the token is bound to a Pod
 * of that name (created, never run), as a kubelet's is: the API server then names the pod in the
 * user's extra (`authentication.kubernetes.io/pod-name`).
 */
export async function mintServiceAccountIdentity(
  plane: { client(): KubeClient; server: string; adminConfig: ClusterConfig; dir: string },
  namespace: string,
  name: string,
  options: { expirationSeconds?: number; pod?: string } = {},
): Promise<ServiceAccountIdentity> {
  const client = plane.client();
  await ensure(client, NAMESPACE, { metadata: { name: namespace } });
  await ensure(client, SERVICE_ACCOUNT, { metadata: { name, namespace } });
  let boundObjectRef;
  if (options.pod) {
    await ensure(client, POD, {
      metadata: { name: options.pod, namespace },
      spec: {
        serviceAccountName: name,
        // What Pod Security's "restricted" asks, as the operator's namespace enforces it.
        securityContext: { runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } },
        containers: [{
          name: "operator",
          image: "operator.invalid/never-pulled",
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
        }],
      },
    } as KubeObject);
    const pod = await client.get(POD, options.pod, { namespace });
    boundObjectRef = { apiVersion: "v1", kind: "Pod", name: options.pod, uid: pod.metadata?.uid };
  }
  const request = await client.create(SERVICE_ACCOUNT, {
    apiVersion: "authentication.k8s.io/v1",
    kind: "TokenRequest",
    metadata: { name, namespace },
    spec: { expirationSeconds: options.expirationSeconds ?? 3600, boundObjectRef },
  } as KubeObject, { subresource: "token", namespace });
  const token = (request as { status?: { token?: string } }).status?.token;
  if (!token) throw new Error(`TokenRequest for ${namespace}/${name} returned no token`);
  const config: ClusterConfig = {
    server: plane.server,
    caData: plane.adminConfig.caData,
    token,
    namespace,
    source: `service account ${namespace}/${name} on ${plane.dir}`,
  };
  const kubeconfigPath = `${plane.dir}/sa-${namespace}-${name}${
    options.pod ? `-${options.pod}` : ""
  }.kubeconfig`;
  await Deno.writeTextFile(kubeconfigPath, kubeconfigYaml(config), { mode: 0o600 });
  return {
    namespace,
    name,
    token,
    config,
    kubeconfigPath,
    username: `system:serviceaccount:${namespace}:${name}`,
  };
}

async function ensure(
  client: KubeClient,
  resource: Resource,
  object: KubeObject,
): Promise<void> {
  try {
    await client.create(resource, object);
  } catch (error) {
    if (!isApiError(error, 409)) throw error;
  }
}

/** Grants `username` the built-in `cluster-admin`; for tests that need a token identity with rights. */
export async function grantClusterAdmin(client: KubeClient, username: string): Promise<void> {
  await client.create(CLUSTER_ROLE_BINDING, {
    metadata: { generateName: "ptemplate-test-admin-" },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
    subjects: [{ kind: "User", name: username, apiGroup: "rbac.authorization.k8s.io" }],
  });
}
