import { expect } from "expect";
import { parse, parseAllDocuments } from "yaml";
import type { Unstructured } from "../../mod.ts";
import { grantsOf, type PolicyRule } from "../../runtime/mod.ts";
import { type BundleFile, olmBundle } from "./olm_bundle.ts";
import { bundleChecks } from "./olm_checks.ts";
import { builtInCatalog, crdsOf, selectPlugins } from "../plugin_loading/plugin_catalog.ts";
import { rbacManifests } from "../manifests/rbac_manifests.ts";

const catalog = selectPlugins(builtInCatalog(), undefined);
const bundle = () =>
  olmBundle({
    version: "0.2.0",
    image: "registry.example/op@sha256:0000",
    bundleImage: "registry.example/op-bundle:v0.2.0",
    replaces: "0.1.0",
    catalog,
    createdAt: "2026-01-01T00:00:00Z",
  });
const manifests = (files: BundleFile[]) =>
  files.filter((f) => f.path.startsWith("bundle/manifests/")).map((f) =>
    parse(f.text) as Unstructured
  );
const csvOf = (files: BundleFile[]) =>
  manifests(files).find((m) => m.kind === "ClusterServiceVersion")!;
type Install = {
  deployments: {
    spec: { template: { spec: { containers: { image: string; args: string[] }[] } } };
  }[];
  permissions: { rules: PolicyRule[] }[];
  clusterPermissions: { rules: PolicyRule[] }[];
};
const installOf = (csv: Unstructured) => (csv.spec as { install: { spec: Install } }).install.spec;

Deno.test("the bundle's CRDs are deploy/webhooks', its RBAC what `rbac --webhooks` derives", async () => {
  const files = await bundle();
  const crds = manifests(files).filter((m) => m.kind === "CustomResourceDefinition");
  // The Ptemplate CRD with v1beta1 and its conversion webhook, at OLM's Service for it.
  const [deployed] = parseAllDocuments(
    await Deno.readTextFile(
      new URL("../../deploy/webhooks/self-managed/ptemplates.pt.example.com.yaml", import.meta.url),
    ),
  ).map((d) => d.toJS());
  expect(crds.map((c) => c.metadata?.name)).toEqual(crdsOf(catalog).map((c) => c.metadata?.name));
  expect((crds[0].spec as { versions: unknown[] }).versions).toEqual(deployed.spec.versions);
  expect((crds[0].spec as { conversion: unknown }).conversion).toEqual({
    strategy: "Webhook",
    webhook: {
      conversionReviewVersions: ["v1"],
      clientConfig: {
        service: {
          namespace: "ptemplate-operator-system",
          name: "ptemplate-operator-service",
          path: "/convert",
          port: 9443,
        },
      },
    },
  });
  const install = installOf(csvOf(files));
  const granted = grantsOf(
    [...install.permissions, ...install.clusterPermissions].flatMap((p) => p.rules),
  );
  const derived = grantsOf(
    rbacManifests(catalog.map((e) => e.plugin), { webhooks: true })
      .flatMap((o) => (o.rules as PolicyRule[] | undefined) ?? []),
  );
  expect(granted).toEqual(derived);
  // Cluster-wide only what cannot be granted in a namespace: nodes, and checking the callers
  // of /metrics.
  expect(grantsOf(install.clusterPermissions.flatMap((p) => p.rules))).toEqual([
    " namespaces get",
    " nodes list",
    " nodes watch",
    "authentication.k8s.io tokenreviews create",
    "authorization.k8s.io subjectaccessreviews create",
  ]);
  // And the ClusterRole a Prometheus is bound to, to read them.
  expect(manifests(files).find((m) => m.kind === "ClusterRole")?.metadata?.name).toBe(
    "ptemplate-operator-metrics-reader",
  );
});

Deno.test("the CSV's webhooks: each plugin's admission, and the CRDs' conversion", async () => {
  const spec = csvOf(await bundle()).spec as {
    webhookdefinitions: Record<string, unknown>[];
    installModes: { type: string; supported: boolean }[];
  };
  const served = { deploymentName: "ptemplate-operator", containerPort: 9443, targetPort: 9443 };
  expect(spec.webhookdefinitions).toEqual([
    {
      generateName: "status-aggregator.validate.pt.example.com",
      type: "ValidatingAdmissionWebhook",
      ...served,
      webhookPath: "/validate/status-aggregator",
      rules: [{
        apiGroups: ["pt.example.com"],
        apiVersions: ["*"],
        operations: ["CREATE", "UPDATE"],
        resources: ["ptemplates"],
        scope: "Namespaced",
      }],
      matchPolicy: "Equivalent",
      failurePolicy: "Ignore",
      timeoutSeconds: 5,
      sideEffects: "None",
      admissionReviewVersions: ["v1"],
    },
    {
      generateName: "conversion.ptemplate-operator",
      type: "ConversionWebhook",
      ...served,
      webhookPath: "/convert",
      conversionCRDs: ["ptemplates.pt.example.com"],
      sideEffects: "None",
      admissionReviewVersions: ["v1"],
    },
  ]);
  // OLM installs a conversion webhook only for an operator of all namespaces.
  expect(spec.installModes.filter((m) => m.supported).map((m) => m.type)).toEqual([
    "AllNamespaces",
  ]);
});

Deno.test("the install strategy is deploy/'s Deployment, with the image and OLM's namespaces", async () => {
  const install = installOf(csvOf(await bundle()));
  const [deployment] = parseAllDocuments(
    await Deno.readTextFile(new URL("../../deploy/core/deployment.yaml", import.meta.url)),
  ).map((d) => d.toJS());
  const container = install.deployments[0].spec.template.spec.containers[0];
  expect(container.image).toBe("registry.example/op@sha256:0000");
  expect(container.args).toEqual(
    deployment.spec.template.spec.containers[0].args.filter((a: string) =>
      !a.startsWith("--leader-election-namespace")
    ),
  );
  expect(JSON.stringify(container)).toContain("olm.targetNamespaces");
});

Deno.test("alm-examples are examples/, and the catalog upgrades from the previous version", async () => {
  const files = await bundle();
  const examples = JSON.parse(
    (csvOf(files).metadata!.annotations as Record<string, string>)["alm-examples"],
  );
  const seed = parse(await Deno.readTextFile(new URL("../../examples/seed.yaml", import.meta.url)));
  expect(examples).toEqual([seed]);
  const catalogFile = files.find((f) => f.path === "catalog/ptemplate-operator/index.yaml")!;
  const documents = parseAllDocuments(catalogFile.text).map((d) => d.toJS());
  expect(documents.find((d) => d.schema === "olm.channel").entries).toEqual([{
    name: "ptemplate-operator.v0.2.0",
    replaces: "ptemplate-operator.v0.1.0",
    skipRange: "<0.2.0",
  }]);
});

Deno.test("scorecard: the bundle passes every check, and each check catches its mistake", async () => {
  const files = await bundle();
  expect(bundleChecks(files).filter((r) => r.problems.length)).toEqual([]);
  const edit = (path: RegExp, change: (o: Record<string, unknown>) => void): BundleFile[] =>
    files.map((f) => {
      if (!path.test(f.path)) return f;
      const object = parse(f.text);
      change(object);
      return { ...f, text: JSON.stringify(object) };
    });
  const failing = (broken: BundleFile[]) =>
    bundleChecks(broken).filter((r) => r.problems.length).map((r) => r.check);
  // A status field without a description.
  expect(failing(edit(/ptemplates\.pt\.example\.com/, (crd) => {
    type Fields = { properties: Record<string, { description?: string }> };
    const spec = crd.spec as {
      versions: { schema: { openAPIV3Schema: { properties: { status: Fields } } } }[];
    };
    const status = spec.versions[0].schema.openAPIV3Schema.properties.status;
    delete status.properties.readyConsumers.description;
  }))).toEqual(["every CRD has a spec and a status, each field described"]);
  const csv = /clusterserviceversion/;
  const owned = (o: Record<string, unknown>) =>
    (o.spec as { customresourcedefinitions: { owned: Record<string, unknown>[] } })
      .customresourcedefinitions.owned[0];
  expect(failing(edit(csv, (o) => void (owned(o).resources = [])))).toEqual([
    "the CSV describes every owned CRD and what it creates",
  ]);
  expect(failing(edit(csv, (o) => {
    const annotations = (o.metadata as { annotations: Record<string, string> }).annotations;
    const [example] = JSON.parse(annotations["alm-examples"]);
    example.spec.maxdev = "five";
    annotations["alm-examples"] = JSON.stringify([example]);
  }))).toEqual(["alm-examples fit their CRDs"]);
  expect(failing(edit(csv, (o) => {
    const descriptors = owned(o).statusDescriptors as {
      path: string;
      "x-descriptors"?: string[];
    }[];
    delete descriptors.find((d) => d.path === "conditions")!["x-descriptors"];
  }))).toEqual(["conditions have a status descriptor"]);
});

Deno.test("a plugin for a cluster-scoped kind gets its grants cluster-wide, not an error", async () => {
  const { definePlugin, NAMESPACE } = await import("../../mod.ts");
  const namespaces = definePlugin({ name: "namespaces", for: NAMESPACE, reconcile: () => {} });
  const files = await olmBundle({
    version: "0.2.0",
    image: "registry.example/op@sha256:0000",
    bundleImage: "registry.example/op-bundle:v0.2.0",
    catalog: [...catalog, { plugin: namespaces, crds: [], enabledByDefault: true }],
  });
  const install = installOf(csvOf(files));
  expect(grantsOf(install.clusterPermissions.flatMap((p) => p.rules))).toContain(
    " namespaces watch",
  );
  expect(grantsOf(install.permissions.flatMap((p) => p.rules))).not.toContain(" namespaces watch");
});
