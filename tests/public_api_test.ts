/**
 * The public API stays curated: a new name in mod.ts is a decision, made here. (Which folder may
 * import which is tests/import_rules_test.ts.)
 */
import { expect } from "expect";

const root = new URL("../", import.meta.url);
const read = (path: string) => Deno.readTextFileSync(new URL(path, root));

Deno.test("mod.ts: a curated list of names, only re-exported", async () => {
  const api = await import("../mod.ts");
  expect(Object.keys(api).sort()).toEqual([
    "ApiError",
    "CLUSTER_ROLE",
    "CLUSTER_ROLE_BINDING",
    "CONDITIONS_SCHEMA",
    "CONFIG_MAP",
    "CUSTOM_RESOURCE_DEFINITION",
    "ConversionError",
    "DAEMON_SET",
    "DEPLOYMENT",
    "DryRunReport",
    "EVENT",
    "KubeClient",
    "LEASE",
    "MUTATING_WEBHOOK_CONFIGURATION",
    "Manager",
    "NAMESPACE",
    "NETWORK_POLICY",
    "NODE",
    "PLUGIN_API_VERSION",
    "POD",
    "PTEMPLATE_OPERATOR",
    "PermanentError",
    "ROLE",
    "ROLE_BINDING",
    "SECRET",
    "SERVICE",
    "SERVICE_ACCOUNT",
    "TemporaryError",
    "UndeclaredReadError",
    "VALIDATING_WEBHOOK_CONFIGURATION",
    "apiVersionOf",
    "childProblem",
    "controllerOf",
    "controllerReference",
    "customResourceDefinition",
    "defineOperator",
    "definePlugin",
    "generationChanged",
    "isApiError",
    "loadClusterConfig",
    "mergeConditions",
    "objectProblems",
    "objectRef",
    "ownershipOf",
    "ownershipProblem",
    "reads",
    "reconcileOnce",
    "refTo",
    "schemaProblems",
    "scoped",
    "setupLogging",
    "shutdownSignal",
    "watch",
  ]);
  const code = read("mod.ts").replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "");
  for (const statement of code.split(";").map((s) => s.trim()).filter(Boolean)) {
    expect(statement).toMatch(/^export (type )?(\*|\{[^}]*\}) from "\.\/[a-z_/]+\.ts"$/);
  }
});

Deno.test("the API's main functions each carry an example, and every example runs", async () => {
  const files = [
    "runtime/plugin/plugin.ts",
    "runtime/plugin/conditions.ts",
    "runtime/reconcile/ownership.ts",
    "kube/resource.ts",
    "kube/object_ref.ts",
    "kube/custom_resource_definition.ts",
    "testing/reconcile_once.ts",
    "runtime/identity/operator_identity.ts",
  ];
  const examples = files.flatMap((file) => [
    ...read(file).matchAll(/@example[^\n]*\n \* ```ts\n([\s\S]*?) \* ```/g),
  ]).map((m) => m[1]);
  for (
    const name of [
      "definePlugin",
      "PermanentError",
      "generationChanged",
      "mergeConditions",
      "objectRef",
      "controllerOf",
      "childProblem",
      "ownershipOf",
      "scoped",
      "customResourceDefinition",
      "watch",
      "reads",
      "reconcileOnce",
      "refTo",
      "defineOperator",
    ]
  ) {
    expect({ name, shown: examples.some((code) => code.includes(`${name}(`)) })
      .toEqual({ name, shown: true });
  }
  // Each runs as written, importing the API as a plugin author does.
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["test", "--doc", "--allow-read", "--allow-env", ...files],
    cwd: root.pathname,
    env: { NO_COLOR: "1" },
  }).output();
  const log = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  expect({ code: out.code, summary: log.match(/^ok \| \d+ passed/m)?.[0] }).toEqual({
    code: 0,
    summary: `ok | ${examples.length} passed`,
  });
});
