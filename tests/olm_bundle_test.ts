/**
 * The OLM bundle against the real thing: operator-framework's own validators (built from the Go
 * module proxy, as the control-plane binaries are) accept it and refuse a broken one; and its
 * install strategy with its webhooks, applied to the real control plane as OLM applies them for a
 * global OperatorGroup, runs the operator as that ServiceAccount with zero 403s, converges the
 * alm-examples, and serves v1beta1 and admission warnings through OLM's Service.
 */
import { expect } from "expect";
import { parse } from "yaml";
import { type BundleFile, olmBundle } from "../cli/olm/olm_bundle.ts";
import { builtInCatalog, selectPlugins } from "../cli/plugin_loading/plugin_catalog.ts";
import { KMM_MODULE_CRD_FILE, MODULE } from "../crds/kmm_module.ts";
import { PTEMPLATE, PTEMPLATE_V1BETA1 } from "../crds/ptemplate.ts";
import type { KubeClient } from "../kube/client.ts";
import type { Unstructured } from "../kube/object.ts";
import type { Resource } from "../kube/resource.ts";
import * as kinds from "../kube/kinds.ts";
import { createCa, issueCertificate } from "../runtime/certificates/mod.ts";
import type { PolicyRule } from "../runtime/mod.ts";
import { DEFAULT_CERT_DIR } from "../runtime/observe/mod.ts";
import { WORKER_LABELS } from "../testing/fake_nodes.ts";
import { findBinaries, KUBERNETES_VERSION } from "../testing/binaries.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { kubectl } from "./fixtures/kubectl.ts";
import { OperatorRun } from "./fixtures/operator_command.ts";
import { AGGREGATOR_ROUTING, routeServiceTo } from "./fixtures/service_endpoints.ts";

const files = await olmBundle({
  version: "0.2.0",
  image:
    "registry.example/ptemplate-operator@sha256:0000000000000000000000000000000000000000000000000000000000000000",
  bundleImage: "registry.example/ptemplate-operator-bundle:v0.2.0",
  replaces: "0.1.0",
  catalog: selectPlugins(builtInCatalog(), undefined),
});
const manifests = files.filter((f) => f.path.startsWith("bundle/manifests/"))
  .map((f) => parse(f.text) as Unstructured);
const csv = manifests.find((m) => m.kind === "ClusterServiceVersion")!;
interface Install {
  deployments: {
    name: string;
    spec: {
      selector: { matchLabels: Record<string, string> };
      template: { spec: { containers: { args: string[] }[] } };
    };
  }[];
  permissions: { serviceAccountName: string; rules: PolicyRule[] }[];
  clusterPermissions: { serviceAccountName: string; rules: PolicyRule[] }[];
}
const install = (csv.spec as { install: { spec: Install } }).install.spec;
const examples: Unstructured[] = JSON.parse(
  (csv.metadata!.annotations as Record<string, string>)["alm-examples"],
);

/** A webhook of the CSV, in the fields OLM reads. */
interface WebhookDefinition {
  type: "ValidatingAdmissionWebhook" | "MutatingAdmissionWebhook" | "ConversionWebhook";
  generateName: string;
  deploymentName: string;
  containerPort: number;
  targetPort: number;
  webhookPath: string;
  admissionReviewVersions: string[];
  conversionCRDs?: string[];
  [field: string]: unknown;
}

/**
 * What OLM does with the CSV's webhookdefinitions when it installs into `namespace` for a global
 * OperatorGroup (operator-lifecycle-manager's pkg/controller/install, certresources.go and
 * webhook.go): a Service `<deployment>-service` with a port per containerPort, a CA and a serving
 * certificate for the Service's names, mounted into the pod at
 * /tmp/k8s-webhook-server/serving-certs (here: written to `certDir`), a webhook configuration per
 * admission webhook (no namespaceSelector: all namespaces), and the conversion of each CRD named.
 */
async function installWebhooksAsOlm(
  admin: KubeClient,
  namespace: string,
  certDir: string,
): Promise<{ service: string; portName: string }> {
  const definitions = (csv.spec as { webhookdefinitions: WebhookDefinition[] })
    .webhookdefinitions;
  const [deployment] = install.deployments;
  expect(new Set(definitions.map((d) => d.deploymentName))).toEqual(new Set([deployment.name]));
  const ports = [...new Set(definitions.map((d) => d.containerPort))];
  expect(ports).toHaveLength(1);
  const service = `${deployment.name.replaceAll(".", "-")}-service`;
  const portName = String(ports[0]);
  await admin.apply(kinds.SERVICE, {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: service, namespace },
    spec: {
      selector: deployment.spec.selector.matchLabels,
      ports: [{ name: portName, port: ports[0], targetPort: definitions[0].targetPort }],
    },
  } as Unstructured, { fieldManager: "olm.install", force: true });
  // OLM mounts its certificate where the operator looks when no --webhook-cert-dir is given.
  expect(DEFAULT_CERT_DIR).toBe("/tmp/k8s-webhook-server/serving-certs");
  const lifetime = 24 * 3600_000;
  const ca = await createCa(`olm-selfsigned-${crypto.randomUUID().slice(0, 8)}`, lifetime);
  const serving = await issueCertificate(ca, `CN=${service}`, {
    dns: [`${service}.${namespace}`, `${service}.${namespace}.svc`],
  }, lifetime);
  await Deno.writeTextFile(`${certDir}/tls.crt`, serving.cert);
  await Deno.writeTextFile(`${certDir}/tls.key`, serving.key);
  for (const definition of definitions) {
    const { type, generateName, webhookPath, admissionReviewVersions } = definition;
    const clientConfig = {
      service: { name: service, namespace, path: webhookPath, port: ports[0] },
      caBundle: btoa(ca.cert),
    };
    if (type === "ConversionWebhook") {
      for (const crd of definition.conversionCRDs ?? []) {
        await admin.patch(kinds.CUSTOM_RESOURCE_DEFINITION, crd, {
          spec: {
            conversion: {
              strategy: "Webhook",
              webhook: { clientConfig, conversionReviewVersions: admissionReviewVersions },
            },
          },
        });
      }
      continue;
    }
    const hook = Object.fromEntries(
      [
        "rules",
        "failurePolicy",
        "matchPolicy",
        "objectSelector",
        "sideEffects",
        "timeoutSeconds",
        "admissionReviewVersions",
        ...(type === "MutatingAdmissionWebhook" ? ["reinvocationPolicy"] : []),
      ].filter((field) => definition[field] !== undefined).map((f) => [f, definition[f]]),
    );
    await admin.create(
      type === "ValidatingAdmissionWebhook"
        ? kinds.VALIDATING_WEBHOOK_CONFIGURATION
        : kinds.MUTATING_WEBHOOK_CONFIGURATION,
      {
        metadata: { generateName: `${generateName}-` },
        webhooks: [{ name: generateName, clientConfig, ...hook }],
      } as Unstructured,
    );
  }
  return { service, portName };
}

/**
 * What OLM creates for the CSV's RBAC in `installNamespace` for a global OperatorGroup (the only
 * kind the CSV supports): its Roles in that namespace, and copied cluster-wide.
 */
async function grantAsOlm(admin: KubeClient, installNamespace: string): Promise<void> {
  /** A Role or ClusterRole with these rules, bound to the ServiceAccount. */
  const grant = async (name: string, sa: string, rules: PolicyRule[], namespace?: string) => {
    const kind = namespace ? "Role" : "ClusterRole";
    const metadata = namespace ? { name, namespace } : { name };
    const rbac = "rbac.authorization.k8s.io/v1";
    const apply = (resource: Resource, object: Unstructured) =>
      admin.apply(resource, object, { fieldManager: "olm-test", force: true });
    await apply(namespace ? kinds.ROLE : kinds.CLUSTER_ROLE, {
      apiVersion: rbac,
      kind,
      metadata,
      rules,
    });
    await apply(namespace ? kinds.ROLE_BINDING : kinds.CLUSTER_ROLE_BINDING, {
      apiVersion: rbac,
      kind: `${kind}Binding`,
      metadata,
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind, name },
      subjects: [{ kind: "ServiceAccount", name: sa, namespace: installNamespace }],
    });
  };
  for (const [i, { serviceAccountName, rules }] of install.clusterPermissions.entries()) {
    await grant(`${installNamespace}-cluster-${i}`, serviceAccountName, rules);
  }
  for (const [i, { serviceAccountName, rules }] of install.permissions.entries()) {
    await grant(`${installNamespace}-${i}`, serviceAccountName, rules, installNamespace);
    await grant(`${installNamespace}-${i}`, serviceAccountName, rules);
  }
}

await integrationTest("OLM: the CSV's install strategy runs the operator with zero 403s", {
  controllerManager: true,
  scheduler: true,
  kwok: true,
  audit: true,
  // The API server calls the webhooks' Service at endpoints the test points at the operator.
  apiServerFlags: [AGGREGATOR_ROUTING],
  crds: [
    ...manifests.filter((m) => m.kind === "CustomResourceDefinition"),
    KMM_MODULE_CRD_FILE,
  ],
}, async (plane, step) => {
  const admin = plane.client();

  await step(
    "operator-framework's validators accept the bundle and refuse a broken one",
    async () => {
      const { "olm-validate": validator } = await findBinaries({ names: ["olm-validate"] });
      const validate = async (bundle: BundleFile[]) => {
        const dir = await Deno.makeTempDir({ prefix: "olm-bundle-" });
        try {
          for (const file of bundle.filter((f) => f.path.startsWith("bundle/"))) {
            const path = `${dir}/${file.path}`;
            await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
            await Deno.writeTextFile(path, file.text);
          }
          const out = await new Deno.Command(validator, {
            args: [
              "-k8s-version",
              KUBERNETES_VERSION.replace(/^v(\d+\.\d+).*/, "$1"),
              `${dir}/bundle`,
            ],
          }).output();
          const decode = (b: Uint8Array) => new TextDecoder().decode(b);
          return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
        } finally {
          await Deno.remove(dir, { recursive: true });
        }
      };
      // Clean: no error and no warning from the CSV, CRD, bundle, OperatorHub, capabilities,
      // categories and good-practices validators.
      expect(await validate(files)).toEqual({ code: 0, stdout: "", stderr: "" });
      // Broken: a CSV that owns a CRD the bundle lacks, a maintainer without an address, and a
      // conversion webhook in an operator that may be installed for one namespace.
      const broken = files.filter((f) => !f.path.endsWith("ptemplates.pt.example.com.yaml"))
        .map((f) =>
          f.path.endsWith(".clusterserviceversion.yaml")
            ? {
              ...f,
              text: f.text.replace(/email: \S+/, "email: nobody")
                .replace(/(type: MultiNamespace\n\s+supported:) false/, "$1 true"),
            }
            : f
        );
      const refused = await validate(broken);
      expect(refused.code).toBe(1);
      expect(refused.stdout).toMatch(
        /^ERROR bundle: .*owned CRD .*Ptemplate.* not found in bundle/m,
      );
      expect(refused.stdout).toMatch(/^ERROR operatorhub: .*email nobody is invalid/m);
      expect(refused.stdout).toMatch(
        /^ERROR csv: .*only AllNamespaces InstallModeType is supported when conversionCRDs/m,
      );
    },
  );

  await plane.createNodes({ name: "worker-1", labels: { ...WORKER_LABELS } });

  await step("all namespaces, with its webhooks, installed as OLM installs them", async () => {
    const installNamespace = "operators";
    const identity = await plane.serviceAccountIdentity(
      installNamespace,
      install.permissions[0].serviceAccountName,
    );
    await grantAsOlm(admin, installNamespace);
    const certDir = await Deno.makeTempDir({ prefix: "olm-webhook-cert-" });
    const { service, portName } = await installWebhooksAsOlm(admin, installNamespace, certDir);
    // The Deployment's container, as OLM runs it: its args, WATCH_NAMESPACE from the global
    // OperatorGroup (""), the certificate OLM mounts (where the operator looks by default), and
    // ports of our own choosing on loopback.
    const operator = OperatorRun.start([
      ...install.deployments[0].spec.template.spec.containers[0].args,
      `--kubeconfig=${identity.kubeconfigPath}`,
      "--metrics-bind-address=127.0.0.1:0",
      "--health-probe-bind-address=127.0.0.1:0",
      "--webhook-bind-address=127.0.0.1:0",
      `--webhook-cert-dir=${certDir}`,
    ], { env: { WATCH_NAMESPACE: "" } });
    try {
      const port = await operator.port("webhooks");
      await routeServiceTo(admin, { namespace: installNamespace, service, portName, port });
      await admin.create(kinds.NAMESPACE, { metadata: { name: "demo" } });
      for (const example of examples) {
        await admin.create(PTEMPLATE, {
          ...example,
          metadata: { ...example.metadata, namespace: "demo" },
        });
      }
      const name = examples[0].metadata!.name!;
      await eventually(async () => {
        const pt = await admin.get(PTEMPLATE, name, {
          namespace: "demo",
        });
        expect(pt.status?.consumers).toHaveLength(1);
        await admin.get(MODULE, name, { namespace: "demo" });
      }, { timeoutMs: 60_000 });
      expect(operator.lines.map((l) => l.msg)).toContainEqual(
        expect.stringContaining("watching all namespaces;"),
      );
      // v1beta1, through the conversion webhook OLM set up.
      await eventually(() =>
        admin.create(PTEMPLATE_V1BETA1, {
          metadata: { name: "beta", namespace: "demo" },
          spec: { maxDevices: 4, selector: { ...WORKER_LABELS } },
        }), { timeoutMs: 30_000 });
      const beta = await admin.get(PTEMPLATE_V1BETA1, name, { namespace: "demo" });
      expect((beta.spec as { maxDevices: number }).maxDevices).toBe(
        (examples[0].spec as { maxdev: number }).maxdev,
      );
      expect(
        (await admin.get(PTEMPLATE, "beta", { namespace: "demo" }))
          .spec.maxdev,
      ).toBe(4);
      // Admission's warnings, through the validating webhook OLM made.
      await admin.create(kinds.NAMESPACE, {
        metadata: {
          name: "strict",
          labels: { "pod-security.kubernetes.io/enforce": "restricted" },
        },
      });
      const warned = await eventually(async () => {
        const out = await kubectl(plane.binaries.kubectl, plane.adminKubeconfigPath, [
          "apply",
          "-f",
          "-",
        ], {
          stdin: "apiVersion: pt.example.com/v1alpha1\nkind: Ptemplate\nmetadata:\n" +
            "  name: locked\n  namespace: strict\nspec:\n  selector:\n" +
            "    node-role.kubernetes.io/worker: worker\n",
        });
        expect(out.stderr).toContain("Warning:");
        return out;
      }, { timeoutMs: 30_000 });
      expect(warned.stderr).toContain('namespace strict enforces Pod Security "restricted"');
    } finally {
      expect((await operator.stop()).code).toBe(0);
      await Deno.remove(certDir, { recursive: true });
    }
    const requests = (await plane.auditEvents()).filter((e) =>
      e.user.username === identity.username
    );
    // The audit log saw this identity at work (an empty log would prove nothing below).
    expect(requests.filter((e) => e.verb === "create").length).toBeGreaterThan(0);
    const denied = requests.filter((e) => e.responseStatus?.code === 403);
    expect(denied.map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
  });
});
