/**
 * The OLM bundle against the real thing: operator-framework's own validators (built from the Go
 * module proxy, as the control-plane binaries are) accept it and refuse a broken one; and its
 * install strategy, applied to the real control plane as OLM applies it for an all-namespaces
 * and a multi-namespace OperatorGroup, runs the operator as that ServiceAccount with zero 403s and
 * converges the alm-examples.
 */
import { expect } from "expect";
import { parse } from "yaml";
import { type BundleFile, olmBundle } from "../cli/olm_bundle.ts";
import { builtInCatalog, selectPlugins } from "../cli/plugin_catalog.ts";
import { KMM_MODULE_CRD_FILE, MODULE } from "../crds/kmm_module.ts";
import { PTEMPLATE, type Ptemplate } from "../crds/ptemplate.ts";
import type { KubeClient, Unstructured } from "../kube/client.ts";
import type { Resource } from "../kube/resource.ts";
import * as kinds from "../kube/kinds.ts";
import type { PolicyRule } from "../runtime/mod.ts";
import { findBinaries, KUBERNETES_VERSION } from "../testing/binaries.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { OperatorRun } from "./fixtures/operator_command.ts";

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
  deployments: { spec: { template: { spec: { containers: { args: string[] }[] } } } }[];
  permissions: { serviceAccountName: string; rules: PolicyRule[] }[];
  clusterPermissions: { serviceAccountName: string; rules: PolicyRule[] }[];
}
const install = (csv.spec as { install: { spec: Install } }).install.spec;
const examples: Unstructured[] = JSON.parse(
  (csv.metadata!.annotations as Record<string, string>)["alm-examples"],
);

/** What OLM creates for the CSV's RBAC in `installNamespace`, for its OperatorGroup's targets. */
async function grantAsOlm(
  admin: KubeClient,
  installNamespace: string,
  targets: string[] | "all",
): Promise<void> {
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
    const name = `${installNamespace}-${i}`;
    // The install strategy: a Role in the operator's namespace. The OperatorGroup: the same
    // cluster-wide for all namespaces, else a copy in each target namespace.
    const namespaces = targets === "all" ? [installNamespace] : [installNamespace, ...targets];
    for (const namespace of new Set(namespaces)) {
      await grant(name, serviceAccountName, rules, namespace);
    }
    if (targets === "all") await grant(name, serviceAccountName, rules);
  }
}

await integrationTest("OLM: the CSV's install strategy runs the operator with zero 403s", {
  controllerManager: true,
  scheduler: true,
  kwok: true,
  audit: true,
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
      // Broken: a CSV that owns a CRD the bundle lacks, and a maintainer without an address.
      const broken = files.filter((f) => !f.path.endsWith("ptemplates.pt.example.com.yaml"))
        .map((f) =>
          f.path.endsWith(".clusterserviceversion.yaml")
            ? { ...f, text: f.text.replace(/email: \S+/, "email: nobody") }
            : f
        );
      const refused = await validate(broken);
      expect(refused.code).toBe(1);
      expect(refused.stdout).toMatch(
        /^ERROR bundle: .*owned CRD .*Ptemplate.* not found in bundle/m,
      );
      expect(refused.stdout).toMatch(/^ERROR operatorhub: .*email nobody is invalid/m);
    },
  );

  await plane.createNodes({
    name: "worker-1",
    labels: { "node-role.kubernetes.io/worker": "worker" },
  });

  const installed = async (installNamespace: string, targets: string[] | "all", into: string) => {
    const identity = await plane.serviceAccountIdentity(
      installNamespace,
      install.permissions[0].serviceAccountName,
    );
    // An OperatorGroup targets namespaces that exist.
    for (const namespace of targets === "all" ? [into] : targets) {
      await admin.create(kinds.NAMESPACE, { metadata: { name: namespace } });
    }
    await grantAsOlm(admin, installNamespace, targets);
    // The Deployment's container, as OLM runs it: its args, WATCH_NAMESPACE from the
    // OperatorGroup ("" for all), and ports of our own choosing on loopback.
    const operator = OperatorRun.start([
      ...install.deployments[0].spec.template.spec.containers[0].args,
      `--kubeconfig=${identity.kubeconfigPath}`,
      "--metrics-bind-address=127.0.0.1:0",
      "--health-probe-bind-address=127.0.0.1:0",
    ], { WATCH_NAMESPACE: targets === "all" ? "" : targets.join(",") });
    try {
      for (const example of examples) {
        await admin.create(PTEMPLATE, {
          ...example,
          metadata: { ...example.metadata, namespace: into },
        });
      }
      const name = examples[0].metadata!.name!;
      await eventually(async () => {
        const pt = await admin.get<Ptemplate & Unstructured>(PTEMPLATE, name, { namespace: into });
        expect(pt.status?.consumers).toHaveLength(1);
        await admin.get(MODULE, name, { namespace: into });
      }, { timeoutMs: 60_000 });
      // It watches what the OperatorGroup says, through WATCH_NAMESPACE.
      const scope = targets === "all" ? "all namespaces" : `namespaces ${targets.join(", ")}`;
      expect(operator.lines.map((l) => l.msg)).toContainEqual(
        expect.stringContaining(`watching ${scope};`),
      );
    } finally {
      expect((await operator.stop()).code).toBe(0);
    }
    const requests = (await plane.auditEvents()).filter((e) =>
      e.user.username === identity.username
    );
    // The audit log saw this identity at work (an empty log would prove nothing below).
    expect(requests.filter((e) => e.verb === "create").length).toBeGreaterThan(0);
    const denied = requests.filter((e) => e.responseStatus?.code === 403);
    expect(denied.map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
  };

  await step(
    "all namespaces (a global OperatorGroup)",
    () => installed("operators", "all", "demo"),
  );
  await step(
    "two target namespaces (a MultiNamespace OperatorGroup)",
    () => installed("operators-multi", ["team-a", "team-b"], "team-a"),
  );
});
