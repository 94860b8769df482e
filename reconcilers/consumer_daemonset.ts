/** The `consumer-daemonset` plugin: for each Ptemplate, the DaemonSet of pods that use its devices. */
import type { DaemonSet } from "kubernetes-types/apps/v1.d.ts";
import { DAEMON_SET, definePlugin, reads, type Stored } from "../mod.ts";
import { effectiveSpec, PTEMPLATE, type Ptemplate } from "../crds/ptemplate.ts";

/** The extended resource the device plugin advertises. */
export const DEVICE_RESOURCE = "example.com/ptemplate";

/**
 * The label the consumer DaemonSet selects its pods by: the Ptemplate's UID, so no pod that
 * merely carries `app: <name>` (which anyone may set) is adopted, or deleted, by the DaemonSet
 * controller, and a Ptemplate deleted and made again under the same name starts afresh.
 */
export const PTEMPLATE_UID_LABEL = "pt.example.com/ptemplate-uid";

export function consumerDaemonSetName(pt: { metadata: { name: string } }): string {
  return `${pt.metadata.name}-consumer`;
}

/** The consumer DaemonSet a Ptemplate wants. */
export function daemonSetFor(pt: Stored<Ptemplate, true>): DaemonSet {
  const spec = effectiveSpec(pt.spec);
  const app = { app: pt.metadata.name };
  const selector = { [PTEMPLATE_UID_LABEL]: pt.metadata.uid };
  return {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name: consumerDaemonSetName(pt), namespace: pt.metadata.namespace, labels: app },
    spec: {
      selector: { matchLabels: selector },
      template: {
        // `app` for people's habits (kubectl get pods -l app=<name>); the selector is the UID.
        metadata: { labels: { ...app, ...selector } },
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

export const consumerDaemonSetPlugin = definePlugin({
  name: "consumer-daemonset",
  for: PTEMPLATE,
  // Selectors cannot change in place: DaemonSets made with another selector (before 0.2, by
  // `app` alone) are deleted and made anew, with an Event.
  owns: [{ resource: DAEMON_SET, recreateOnImmutableChange: true }],
  writesStatus: false,
  reads: [reads(PTEMPLATE, ["spec"]), reads(DAEMON_SET, [])],
  reconcile: (pt) => ({ children: [daemonSetFor(pt)] }),
});
