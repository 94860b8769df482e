/**
 * The public API stays curated: a new name in mod.ts is a decision, made here. (Which folder may
 * import which is tests/import_rules_test.ts.)
 */
import { expect } from "expect";

const root = new URL("../", import.meta.url);
const read = (path: string) => Deno.readTextFileSync(new URL(path, root));

/** The names an entry exports, as `deno doc --json` lists them (types included). */
async function documentedNames(entry: string): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--json", entry],
    cwd: root.pathname,
  }).output();
  if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
  const doc = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    nodes: Record<string, { symbols: { name: string }[] }>;
  };
  return Object.values(doc.nodes).flatMap((node) => node.symbols.map((s) => s.name)).sort();
}

/** An entry holds re-exports only: the code lives in the files it names. */
function expectOnlyReexports(entry: string): void {
  const code = read(entry).replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "");
  for (const statement of code.split(";").map((s) => s.trim()).filter(Boolean)) {
    expect(statement).toMatch(/^export (type )?(\*|\{[^}]*\}) from "\.\/[a-z_/]+\.ts"$/);
  }
}

Deno.test("mod.ts: what a plugin author needs, at most 50 names, only re-exported", async () => {
  const names = await documentedNames("mod.ts");
  expect(names).toEqual([
    "AdmissionContext",
    "AdmissionRequest",
    "AdmissionVerdict",
    "CONDITIONS_SCHEMA",
    "CONFIG_MAP",
    "CacheReader",
    "ChildProblem",
    "Condition",
    "ConditionInput",
    "ConversionError",
    "CrdOptions",
    "DAEMON_SET",
    "DEPLOYMENT",
    "EVENT",
    "KubeObject",
    "NAMESPACE",
    "NODE",
    "NamespacedName",
    "OpenApiSchema",
    "Outcome",
    "OwnedKind",
    "POD",
    "PermanentError",
    "Plugin",
    "PluginSpec",
    "ReconcileContext",
    "ReconcileOnceResult",
    "Resource",
    "SECRET",
    "SERVICE",
    "StoreChange",
    "Stored",
    "TemporaryError",
    "Unstructured",
    "apiVersionOf",
    "childProblem",
    "controllerOf",
    "controllerReference",
    "customResourceDefinition",
    "definePlugin",
    "generationChanged",
    "isApiError",
    "mergeConditions",
    "objectProblems",
    "objectRef",
    "ownershipOf",
    "reads",
    "reconcileOnce",
    "scoped",
    "watch",
  ]);
  expect(names.length).toBeLessThanOrEqual(50);
  expectOnlyReexports("mod.ts");
});

Deno.test("operator.ts: what running an operator binary of one's own needs, pinned", async () => {
  expect(await documentedNames("operator.ts")).toEqual([
    "BundleFile",
    "BundleOptions",
    "CatalogEntry",
    "CheckResult",
    "ClientOptions",
    "ClusterConfig",
    "Conversion",
    "CrdFile",
    "DryRunObject",
    "DryRunReport",
    "EstablishedNames",
    "ExecConfig",
    "FormerIdentity",
    "KubeClient",
    "LoadOptions",
    "LogFormat",
    "Manager",
    "ManagerEndpoints",
    "ManagerOptions",
    "OperatorIdentity",
    "OperatorIdentityInit",
    "OperatorOptions",
    "PLUGIN_API_VERSION",
    "PTEMPLATE_OPERATOR",
    "PluginApiVersion",
    "WouldChange",
    "bundleChecks",
    "crdFiles",
    "defineOperator",
    "loadClusterConfig",
    "olmBundle",
    "rbacFile",
    "readExamples",
    "runOperator",
    "setupLogging",
    "shutdownSignal",
    "staleFiles",
    "typeFiles",
    "typesBesidePlugin",
    "writeFiles",
  ]);
  expectOnlyReexports("operator.ts");
});

/**
 * Hard mode is large, so its names are kept in a file beside this test; a name that comes or goes
 * is a change to review there (regenerate with `deno doc --json`, as `documentedNames` does).
 */
Deno.test("runtime/mod.ts and kube/mod.ts: the hard-mode names, pinned", async () => {
  const pinned = JSON.parse(read("tests/fixtures/hard_mode_names.json")) as Record<
    string,
    string[]
  >;
  for (const entry of ["runtime/mod.ts", "kube/mod.ts"]) {
    expect({ entry, names: await documentedNames(entry) }).toEqual({
      entry,
      names: pinned[entry],
    });
    expectOnlyReexports(entry);
  }
});

Deno.test("the API's main functions each carry an example, and every example runs", async () => {
  const files = [
    "runtime/plugin/plugin.ts",
    "runtime/plugin/watches.ts",
    "runtime/plugin/plugin_errors.ts",
    "runtime/plugin/declared.ts",
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
