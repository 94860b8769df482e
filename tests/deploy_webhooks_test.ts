/**
 * deploy/webhooks/ renders with the real kubectl, and its two certificate modes hold together:
 * the Secret cert-manager writes is mounted where the operator reads certificates, the
 * self-managed mode's RBAC names the Secret the operator makes, and every webhook calls the
 * Service that reaches the container's webhook port.
 */
import { expect } from "expect";
import type { Unstructured } from "../kube/client.ts";
import { DEFAULT_CERT_DIR } from "../runtime/serving_certificate.ts";
import { WEBHOOK_SERVICE } from "../cli/webhook_files.ts";
import { binariesTest } from "../testing/integration_test_case.ts";
import { kustomize } from "./fixtures/manifests.ts";

interface Container {
  args?: string[];
  ports?: { name: string; containerPort: number }[];
  volumeMounts?: { name: string; mountPath: string }[];
}

const find = (objects: Unstructured[], kind: string, name?: string) =>
  objects.find((o) => o.kind === kind && (!name || o.metadata?.name === name))!;
const containerOf = (objects: Unstructured[]) =>
  (find(objects, "Deployment").spec as { template: { spec: { containers: Container[] } } })
    .template.spec.containers[0];

await binariesTest(
  "deploy/webhooks: cert-manager and self-managed overlays",
  async (binaries, t) => {
    for (const mode of ["cert-manager", "self-managed"]) {
      await t.step(`${mode}: webhooks reach the container, through the Service`, async () => {
        const objects = await kustomize(binaries.kubectl, `deploy/webhooks/${mode}`);
        const service = find(objects, "Service", WEBHOOK_SERVICE) as Unstructured & {
          spec: { ports: { targetPort: string }[] };
        };
        const port = containerOf(objects).ports!.find((p) =>
          p.name === service.spec.ports[0].targetPort
        );
        expect(port?.containerPort).toBe(9443);
        const config = find(objects, "ValidatingWebhookConfiguration") as Unstructured & {
          webhooks: {
            failurePolicy: string;
            clientConfig: { service: { name: string; namespace: string } };
          }[];
        };
        for (const webhook of config.webhooks) {
          expect(webhook.clientConfig.service).toMatchObject({
            name: WEBHOOK_SERVICE,
            namespace: service.metadata!.namespace,
          });
          expect(webhook.failurePolicy).toBe("Ignore");
        }
        // Admission's reads are granted; nothing is a wildcard.
        expect(find(objects, "ClusterRole", "ptemplate-operator-admission")).toBeDefined();
        expect(JSON.stringify(objects.filter((o) => /Role$/.test(o.kind!)))).not.toContain("*");
      });
    }

    await t.step(
      "cert-manager: its Secret is mounted where the operator reads certificates",
      async () => {
        const objects = await kustomize(binaries.kubectl, "deploy/webhooks/cert-manager");
        const secret = (find(objects, "Certificate").spec as { secretName: string }).secretName;
        const deployment = find(objects, "Deployment").spec as {
          template: { spec: { volumes: { name: string; secret?: { secretName: string } }[] } };
        };
        const volume = deployment.template.spec.volumes.find((v) =>
          v.secret?.secretName === secret
        )!;
        const mount = containerOf(objects).volumeMounts!.find((m) => m.name === volume.name)!;
        expect(mount.mountPath).toBe(DEFAULT_CERT_DIR);
        expect(find(objects, "ValidatingWebhookConfiguration").metadata?.annotations).toEqual({
          "cert-manager.io/inject-ca-from": `ptemplate-operator-system/${
            find(objects, "Certificate").metadata!.name
          }`,
        });
      },
    );

    await t.step("self-managed: the flag, and RBAC for exactly the Secret it makes", async () => {
      const objects = await kustomize(binaries.kubectl, "deploy/webhooks/self-managed");
      expect(containerOf(objects).args).toContain("--webhook-cert-mode=self-managed");
      const role = find(objects, "Role", "ptemplate-operator-webhook-cert") as Unstructured & {
        rules: { resourceNames?: string[] }[];
      };
      expect(role.rules.flatMap((r) => r.resourceNames ?? [])).toEqual([`${WEBHOOK_SERVICE}-cert`]);
    });
  },
);
