/**
 * `new <dir>`: what a new operator generates from its catalog (`crds.ts`: CRD YAML, each kind's
 * types, deploy/rbac) and the tests it carries about itself: those files are current
 * (`crds_test.ts`), and its deploy renders, installs on a real API server and its OLM bundle
 * validates (`deploy_test.ts`), so its own `deno task test` proves it can reach a cluster.
 */

/** `crds.ts`: the generated files, from catalog.ts or (for `new plugin`) a catalog given. */
export const CRDS_MODULE =
  `/** \`deno task crds\`: writes crds/<name>.yaml, each kind's types and deploy/rbac/, from catalog.ts. */
import {
  type CatalogEntry,
  type CrdFile,
  crdFiles,
  rbacFile,
  typeFiles,
  typesBesidePlugin,
  writeFiles,
} from "ptemplate-operator/operator.ts";
import { CATALOG } from "./catalog.ts";
import { OPERATOR } from "./operator.ts";

/** What \`deno task crds\` writes: the CRDs' YAML, each kind's types beside its plugin, the RBAC. */
export function generatedFiles(catalog: CatalogEntry[] = CATALOG): CrdFile[] {
  return [
    ...crdFiles(catalog, "catalog.ts"),
    ...typeFiles(catalog, typesBesidePlugin),
    rbacFile(catalog, OPERATOR),
  ];
}

if (import.meta.main) await writeFiles(generatedFiles(), new URL("./", import.meta.url));
`;

export const CRDS_TEST = `import { expect } from "expect";
import { staleFiles } from "ptemplate-operator/operator.ts";
import { generatedFiles } from "./crds.ts";

Deno.test("crds/, each kind's types and deploy/rbac match catalog.ts (run \`deno task crds\` if not)", async () => {
  expect(await staleFiles(generatedFiles(), new URL("./", import.meta.url))).toEqual([]);
});
`;

/** `deploy_test.ts`: the deploy and the bundle, checked as this operator's. */
export const DEPLOY_TEST =
  `/** deploy/ renders and installs on a real API server, named after this operator; its OLM bundle validates. */
import { expect } from "expect";
import { bundleChecks, olmBundle, readExamples } from "ptemplate-operator/operator.ts";
import type { Unstructured } from "ptemplate-operator/mod.ts";
import {
  integrationTest,
  kubectlRun,
  kustomize,
  validateBundle,
} from "ptemplate-operator/testing/mod.ts";
import { CATALOG } from "./catalog.ts";
import { OPERATOR } from "./operator.ts";

const here = new URL("./", import.meta.url);
const CLUSTER_SCOPED = new Set([
  "Namespace",
  "ClusterRole",
  "ClusterRoleBinding",
  "ValidatingAdmissionPolicy",
  "ValidatingAdmissionPolicyBinding",
]);

await integrationTest("deploy/ and the OLM bundle", {}, async (plane, step) => {
  const kubectl = plane.binaries.kubectl;
  let base: Unstructured[] = [];
  await step("kubectl kustomize renders deploy/ and its overlays, all named after it", async () => {
    for (const folder of ["deploy", "deploy/monitoring"]) {
      const objects = await kustomize(kubectl, new URL(folder, here));
      if (folder === "deploy") base = objects;
      for (const object of objects) {
        const { kind, metadata } = object;
        const where = \`\${folder}: \${kind} \${metadata?.name}\`;
        expect({ where, namespace: metadata?.namespace }).toEqual({
          where,
          namespace: CLUSTER_SCOPED.has(kind!) ? undefined : OPERATOR.namespace,
        });
        expect({ where, named: metadata?.name?.startsWith(OPERATOR.name) }).toEqual({
          where,
          named: true,
        });
      }
    }
    const deployment = base.find((o) => o.kind === "Deployment") as {
      spec: { template: { spec: { serviceAccountName: string; containers: { image: string }[] } } };
    };
    const pod = deployment.spec.template.spec;
    // The image of this version's release: deno.json's version is the tag.
    expect(pod.containers[0].image).toBe(\`\${OPERATOR.image}:v\${OPERATOR.version}\`);
    expect(pod.serviceAccountName).toBe(OPERATOR.name);
  });

  await step("the API server takes it: kubectl apply -k deploy", async () => {
    await kubectlRun(kubectl, ["apply", "-k", new URL("deploy", here).pathname], {
      kubeconfig: plane.adminKubeconfigPath,
    });
    const { stdout } = await kubectlRun(kubectl, [
      "get",
      "deployment,serviceaccount,clusterrole",
      "-A",
      "-l",
      \`app.kubernetes.io/name=\${OPERATOR.name}\`,
      "-o",
      "name",
    ], { kubeconfig: plane.adminKubeconfigPath });
    expect(stdout).toContain(\`deployment.apps/\${OPERATOR.name}\\n\`);
    expect(stdout).toContain(\`serviceaccount/\${OPERATOR.name}\\n\`);
  });

  await step("its OLM bundle passes the scorecard and OLM's validators", async () => {
    const files = await olmBundle({
      operator: OPERATOR,
      version: OPERATOR.version,
      image: \`\${OPERATOR.image}:v\${OPERATOR.version}\`,
      bundleImage: \`\${OPERATOR.image}-bundle:v\${OPERATOR.version}\`,
      catalog: CATALOG,
      examples: await readExamples(new URL("examples", here)),
    });
    const failed = bundleChecks(files).filter((result) => result.problems.length);
    expect(failed).toEqual([]);
    expect(await validateBundle(files)).toEqual({ code: 0, stdout: "", stderr: "" });
  });
});
`;
