/**
 * deploy/webhooks/, each certificate mode applied to the real control plane exactly as the README
 * says (the mode's CRD with `kubectl apply --server-side -f`, then `kubectl apply -k`), the
 * operator run as the Deployment's ServiceAccount with the Deployment's arguments, and the API
 * server calling it through the Service: v1beta1 written and read through the conversion webhook,
 * warnings through the admission webhook, Ptemplates converged. For cert-manager, the test does
 * what cert-manager would (tests/fixtures/cert_manager.ts): issue the Certificate's Secret, mount
 * it, and inject its CA where the manifests' `inject-ca-from` annotations say.
 */
import { expect } from "expect";
import { parseAllDocuments } from "yaml";
import { INJECT_CA_FROM, WEBHOOK_SERVICE } from "../cli/manifests/webhook_files.ts";
import { KMM_MODULE_CRD_FILE, MODULE } from "../crds/kmm_module.ts";
import { PTEMPLATE } from "../crds/ptemplate.ts";
import type { Unstructured } from "../kube/object.ts";
import {
  CUSTOM_RESOURCE_DEFINITION,
  DEPLOYMENT,
  NAMESPACE,
  SECRET,
  VALIDATING_WEBHOOK_CONFIGURATION,
} from "../kube/kinds.ts";
import { DEFAULT_CERT_DIR } from "../runtime/observe/mod.ts";
import { WORKER_LABELS } from "../testing/fake_nodes.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import {
  CERT_MANAGER_CRDS,
  CERTIFICATE,
  injectCaAsCertManager,
  issueAsCertManager,
} from "./fixtures/cert_manager.ts";
import { documented, runDocumented } from "./fixtures/documented_commands.ts";
import { kubectlOk } from "./fixtures/kubectl.ts";
import { kustomize } from "./fixtures/manifests.ts";
import { OperatorRun } from "./fixtures/operator_command.ts";
import { AGGREGATOR_ROUTING, routeServiceTo } from "./fixtures/service_endpoints.ts";

const SYSTEM = "ptemplate-operator-system";
const MODES = ["self-managed", "cert-manager"] as const;
/** The README's commands for each mode, run as written. */
const README_COMMANDS: Record<typeof MODES[number], string[]> = {
  "self-managed": [
    documented(
      "kubectl apply --server-side -f deploy/webhooks/self-managed/ptemplates.pt.example.com.yaml",
    ),
    documented("kubectl apply -k deploy/webhooks/self-managed"),
  ],
  "cert-manager": [
    documented(
      "kubectl apply --server-side -f deploy/webhooks/cert-manager/ptemplates.pt.example.com.yaml",
    ),
    documented("kubectl apply -k deploy/webhooks/cert-manager"),
  ],
};

interface Container {
  args?: string[];
  ports?: { name: string; containerPort: number }[];
  volumeMounts?: { name: string; mountPath: string }[];
}
interface PodSpec {
  containers: Container[];
  volumes?: { name: string; secret?: { secretName: string } }[];
}
type Conversion = { webhook: { clientConfig: { caBundle?: string } } };

const find = (objects: Unstructured[], kind: string, name?: string) =>
  objects.find((o) => o.kind === kind && (!name || o.metadata?.name === name))!;
const podSpecOf = (objects: Unstructured[]) =>
  (find(objects, "Deployment").spec as { template: { spec: PodSpec } }).template.spec;

await integrationTest("deploy/webhooks: both certificate modes, end to end through the Service", {
  controllerManager: true,
  scheduler: true,
  kwok: true,
  crds: [KMM_MODULE_CRD_FILE, ...CERT_MANAGER_CRDS],
  // The API server calls a Service's endpoints, which the test points at the operator it runs.
  apiServerFlags: [AGGREGATOR_ROUTING],
}, async (plane, step) => {
  const admin = plane.client();
  const run = (args: string[], stdin?: string) =>
    kubectlOk(plane.binaries.kubectl, plane.adminKubeconfigPath, args, { stdin });
  await plane.createNodes({ name: "worker-1", labels: { ...WORKER_LABELS } });
  const crdFile = (mode: string) => `deploy/webhooks/${mode}/ptemplates.pt.example.com.yaml`;

  await step("rendered: the webhooks reach the container's port through the Service", async () => {
    for (const mode of MODES) {
      const objects = await kustomize(plane.binaries.kubectl, `deploy/webhooks/${mode}`);
      const service = find(objects, "Service", WEBHOOK_SERVICE) as Unstructured & {
        spec: { ports: { targetPort: string }[] };
      };
      const port = podSpecOf(objects).containers[0].ports!.find((p) =>
        p.name === service.spec.ports[0].targetPort
      );
      expect(port?.containerPort).toBe(9443);
      const config = find(objects, "ValidatingWebhookConfiguration") as Unstructured & {
        webhooks: { failurePolicy: string; clientConfig: { service: Record<string, string> } }[];
      };
      for (const webhook of config.webhooks) {
        expect(webhook.clientConfig.service).toMatchObject({
          name: WEBHOOK_SERVICE,
          namespace: service.metadata!.namespace,
        });
        expect(webhook.failurePolicy).toBe("Ignore");
      }
      expect(JSON.stringify(objects.filter((o) => /Role$/.test(o.kind!)))).not.toContain("*");
    }
  });

  await step("rendered: cert-manager's Secret is mounted where the operator looks", async () => {
    const objects = await kustomize(plane.binaries.kubectl, "deploy/webhooks/cert-manager");
    const certificate = find(objects, "Certificate") as Unstructured & {
      spec: { secretName: string };
    };
    const pod = podSpecOf(objects);
    const volume = pod.volumes!.find((v) => v.secret?.secretName === certificate.spec.secretName)!;
    const mount = pod.containers[0].volumeMounts!.find((m) => m.name === volume.name)!;
    expect(mount.mountPath).toBe(DEFAULT_CERT_DIR);
    expect(pod.containers[0].args!.join(" ")).not.toContain("--webhook-cert");
  });

  for (const mode of MODES) {
    const namespace = `beta-${mode}`;
    await step(`${mode}: applied as the README says, and the operator runs`, async () => {
      for (const command of README_COMMANDS[mode]) {
        const result = await runDocumented(command, {
          kubectl: plane.binaries.kubectl,
          env: { KUBECONFIG: plane.adminKubeconfigPath },
        });
        expect({ command, ...result }).toMatchObject({ command, code: 0 });
      }
      const certDir = await Deno.makeTempDir({ prefix: "webhook-cert-" });
      const extra: string[] = [];
      if (mode === "cert-manager") {
        const crd = parseAllDocuments(await Deno.readTextFile(crdFile(mode)))
          .map((d) => d.toJS() as Unstructured)
          .find((o) => o.kind === "CustomResourceDefinition")!;
        const certificate = crd.metadata!.annotations![INJECT_CA_FROM].split("/");
        expect(certificate[0]).toBe(SYSTEM);
        // The Certificate it names is the one the overlay made.
        await admin.get(CERTIFICATE, certificate[1], { namespace: SYSTEM });
        await issueAsCertManager(admin, SYSTEM, certificate[1]);
        // As the kubelet mounts the Secret at the Deployment's mountPath (DEFAULT_CERT_DIR,
        // where the operator looks by default: the step above).
        const secret = await admin.get(
          SECRET,
          "ptemplate-operator-webhook-cert",
          { namespace: SYSTEM },
        );
        for (const file of ["tls.crt", "tls.key"]) {
          await Deno.writeTextFile(`${certDir}/${file}`, atob(secret.data![file]));
        }
        extra.push(`--webhook-cert-dir=${certDir}`);
      }
      // As a pod of the Deployment, under the leader fence deploy/ installs: every replica
      // keeps the serving certificate and caBundles, and the leader writes the rest.
      const pod = `ptemplate-operator-7c9d6f5b8-${mode === "cert-manager" ? "c3rtm" : "s3lfm"}`;
      const identity = await plane.serviceAccountIdentity(SYSTEM, "ptemplate-operator", { pod });
      const deployment = await admin.get(
        DEPLOYMENT,
        "ptemplate-operator",
        { namespace: SYSTEM },
      );
      // The Deployment's own arguments, serving on loopback ports of the test's choosing.
      const args = deployment.spec!.template.spec!.containers[0].args!
        .filter((a) => !/bind-address|log-format/.test(a));
      const operator = OperatorRun.start([
        ...args,
        `--kubeconfig=${identity.kubeconfigPath}`,
        "--metrics-bind-address=127.0.0.1:0",
        "--health-probe-bind-address=127.0.0.1:0",
        "--webhook-bind-address=127.0.0.1:0",
        ...extra,
      ], { env: { POD_NAME: pod } });
      try {
        const port = await operator.port("webhooks");
        await routeServiceTo(admin, {
          namespace: SYSTEM,
          service: WEBHOOK_SERVICE,
          portName: "webhooks",
          port,
        });

        if (mode === "cert-manager") {
          expect((await injectCaAsCertManager(admin)).sort()).toEqual([
            "CustomResourceDefinition/ptemplates.pt.example.com",
            "ValidatingWebhookConfiguration/ptemplate-operator",
          ]);
        }
        // Either way the caBundles end up holding the CA that signed what the operator serves.
        await eventually(async () => {
          const config = await admin.get(VALIDATING_WEBHOOK_CONFIGURATION, "ptemplate-operator");
          const crd = await admin.get(
            CUSTOM_RESOURCE_DEFINITION,
            "ptemplates.pt.example.com",
          );
          const caBundle = config.webhooks![0].clientConfig.caBundle;
          expect(caBundle).toBeTruthy();
          const spec = crd.spec as { conversion: Conversion };
          expect(spec.conversion.webhook.clientConfig.caBundle).toBe(caBundle);
        }, { timeoutMs: 30_000 });

        await admin.create(NAMESPACE, { metadata: { name: namespace } });
        // Written as v1beta1 with kubectl, through the conversion webhook (the webhook
        // configurations take a moment to reach the API server's admission chain).
        const beta = `apiVersion: pt.example.com/v1beta1\nkind: Ptemplate\nmetadata:\n` +
          `  name: beta\n  namespace: ${namespace}\nspec:\n  maxDevices: 3\n  selector:\n` +
          `    node-role.kubernetes.io/worker: worker\n`;
        await eventually(() => run(["apply", "-f", "-"], beta), { timeoutMs: 30_000 });
        const read = await run([
          "get",
          "ptemplates.v1beta1.pt.example.com",
          "beta",
          "-n",
          namespace,
          "-o",
          "jsonpath={.apiVersion} {.spec.maxDevices}",
        ]);
        expect(read.stdout).toBe("pt.example.com/v1beta1 3");
        const stored = await admin.get(PTEMPLATE, "beta", { namespace });
        expect(stored.spec.maxdev).toBe(3);
        // Admission's warnings, through the same Service.
        await admin.create(NAMESPACE, {
          metadata: {
            name: `${namespace}-strict`,
            labels: { "pod-security.kubernetes.io/enforce": "restricted" },
          },
        });
        const warned = await eventually(async () => {
          const out = await run(
            ["apply", "-f", "-"],
            beta.replace(namespace, `${namespace}-strict`),
          );
          expect(out.stderr).toContain("Warning:");
          return out;
        }, { timeoutMs: 30_000 });
        expect(warned.stderr).toContain(
          `Warning: namespace ${namespace}-strict enforces Pod Security "restricted"`,
        );
        // And the operator does its work as that ServiceAccount.
        await eventually(async () => {
          const pt = await admin.get(PTEMPLATE, "beta", { namespace });
          expect(pt.status?.consumers).toHaveLength(1);
          await admin.get(MODULE, "beta", { namespace });
        }, { timeoutMs: 60_000 });
        expect(operator.lines.filter((l) => l.level === "error")).toEqual([]);
      } finally {
        expect((await operator.stop()).code).toBe(0);
        await Deno.remove(certDir, { recursive: true });
      }
    });

    await step(`${mode}: kubectl delete -k takes it away again, Ptemplates stay`, async () => {
      await run(["delete", "-k", `deploy/webhooks/${mode}`]);
      const gone = await admin.get(NAMESPACE, SYSTEM).then(() => false, () => true);
      expect(gone).toBe(true);
      // The CRD (applied on its own) and the objects of its kind are not part of the overlay.
      await admin.get(PTEMPLATE, "beta", { namespace });
    });
  }
});
