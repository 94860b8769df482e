/** The `consumer-daemonset` plugin: for each Ptemplate, the DaemonSet of pods that use its devices. */
import type { DaemonSet } from "kubernetes-types/apps/v1.d.ts";
import { DAEMON_SET, definePlugin } from "../mod.ts";
import { effectiveSpec, PTEMPLATE, type Ptemplate } from "../crds/ptemplate.ts";

/** The extended resource the device plugin advertises. */
export const DEVICE_RESOURCE = "example.com/ptemplate";

export function consumerDaemonSetName(pt: Ptemplate): string {
  return `${pt.metadata!.name}-consumer`;
}

/** The consumer DaemonSet a Ptemplate wants. */
export function daemonSetFor(pt: Ptemplate): DaemonSet {
  const spec = effectiveSpec(pt.spec);
  const labels = { app: pt.metadata!.name! };
  return {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name: consumerDaemonSetName(pt), namespace: pt.metadata!.namespace, labels },
    spec: {
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          nodeSelector: { ...spec.selector },
          // Only when given: the original crashed dereferencing a missing secret.
          ...(spec.pullSecret ? { imagePullSecrets: [{ name: spec.pullSecret }] } : {}),
          containers: [{
            name: "consumer",
            image: spec.consumerImage,
            imagePullPolicy: "Always",
            securityContext: { privileged: true },
            resources: { limits: { [DEVICE_RESOURCE]: String(spec.requiredDevices) } },
            volumeMounts: [{ name: "hostdev", mountPath: "/hostdev" }],
          }],
          volumes: [{ name: "hostdev", hostPath: { path: "/dev" } }],
        },
      },
    },
  };
}

export const consumerDaemonSetPlugin = definePlugin<Ptemplate>({
  name: "consumer-daemonset",
  for: PTEMPLATE,
  owns: [DAEMON_SET],
  reconcile: (pt) => ({ children: [daemonSetFor(pt)] }),
});
