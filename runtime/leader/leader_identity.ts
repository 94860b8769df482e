/** Who an elector is: an identity unique per process that names the pod it runs in. */
/**
 * `<pod>_<random>`: unique per process, readable in `kubectl get lease`. The pod is `POD_NAME`
 * (the Deployment sets it from the downward API), else the hostname: the API server's leader fence
 * (cli/manifests/leader_fence_policy.ts) matches the holder's prefix against the pod named in the
 * writer's token, and a hostname is not the pod's name under hostNetwork or past 63 characters.
 */
export function defaultIdentity(): string {
  const host = tryRead(() => Deno.env.get("POD_NAME")) || tryRead(() => Deno.hostname());
  // Without either permission the random part still makes it unique.
  return `${host || "unknown"}_${crypto.randomUUID().slice(0, 8)}`;
}

function tryRead(read: () => string | undefined): string | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}
