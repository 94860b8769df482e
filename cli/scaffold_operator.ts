/**
 * `new <dir>`: the files of an operator repository of its own on this runtime (its identity, an
 * empty catalog, its command line, the tasks to test, run, compile it and write its CRDs, a
 * README), importing the runtime from a checkout or a release URL.
 */
import denoJson from "../deno.json" with { type: "json" };
import { defineOperator } from "../runtime/mod.ts";
import type { CrdFile } from "./crd_files.ts";
import { VERSION } from "./version.ts";

/** Where this version of the runtime is published: its tag's files, importable as modules. */
export const RELEASE_URL =
  `https://raw.githubusercontent.com/ptemplate/ptemplate-operator/v${VERSION}/`;

/**
 * The npm packages the runtime's modules import by bare name (the self-managed certificates'
 * `@peculiar/x509` and `reflect-metadata` behind a dynamic import too), and `expect` for tests:
 * an own operator's import map needs every one, or a module the runtime loads later does not
 * resolve. Versions are ours (deno.json).
 */
export const RUNTIME_IMPORTS = [
  "@logtape/logtape",
  "@peculiar/x509",
  "es-module-lexer",
  "expect",
  "kubernetes-types/",
  "reflect-metadata",
  "yaml",
] as const;

/** The import map of an operator that imports the runtime from `runtime`. */
export function importsFor(runtime: string): Record<string, string> {
  const ours: Record<string, string> = denoJson.imports;
  return {
    "ptemplate-operator/": runtime,
    ...Object.fromEntries(RUNTIME_IMPORTS.map((name) => [name, ours[name]])),
  };
}

/**
 * The permission flags of one of our tasks (`start`, `compile`, `test`), with its V8 flags and
 * runtime options, without its module.
 */
function permissionsOf(task: "start" | "compile" | "test"): string {
  const command = denoJson.tasks[task].command.split(/\s+/);
  return command.filter((word) => /^--(allow|deny)-|^--v8-flags=--max|^--no-code-cache$/.test(word))
    .join(" ");
}

export interface OperatorScaffold {
  /** The operator's name (a DNS label). */
  name: string;
  /** Its API domain: its kinds' group. */
  domain: string;
  /** The runtime, as its import map names it: a folder relative to the new one, or a URL; ends in `/`. */
  runtime: string;
}

/** Every file of a new operator repository, relative to its folder. */
export function operatorFiles(options: OperatorScaffold): CrdFile[] {
  const { name, domain, runtime } = options;
  // Refused here, naming the flag, rather than in the new repository's first run.
  defineOperator({ name, domain, version: "0.1.0" });
  const config = {
    version: "0.1.0",
    tasks: {
      test: {
        description:
          "Unit and integration tests (integration tests start a real control plane: Go 1.26 or KUBEBUILDER_ASSETS the first time)",
        // The test harness reads its toolchain and kwok's stages from the runtime: over the
        // network when that is a URL.
        command: `deno test ${
          permissionsOf("test").replace(
            /--allow-net=(\S+)/,
            (flag) => /^https?:/.test(runtime) ? `${flag},${new URL(runtime).host}` : flag,
          )
        }`,
      },
      check: "deno check . && deno fmt --check && deno lint",
      start: {
        description: "Run the operator (the compiled binary's permissions)",
        command: `deno run ${permissionsOf("start")} main.ts`,
      },
      compile: {
        description: `Build the single binary dist/${name}`,
        command: `deno compile ${
          permissionsOf("compile")
        } --exclude-unused-npm --include ${runtime}runtime/isolation/plugin_worker.ts --output dist/${name} main.ts`,
      },
      crds: {
        description: "Write crds/*.yaml and each kind's types from the CRD sources of catalog.ts",
        command: "deno run --allow-read --allow-write=crds,plugins crds.ts",
      },
      new: {
        description: "new plugin <Kind>: a kind, its CRD and types, a plugin and its tests",
        command:
          `deno run --allow-read --allow-write=plugins,catalog.ts,crds ${runtime}main.ts new`,
      },
    },
    imports: importsFor(runtime),
    compilerOptions: { strict: true },
    // Prose as written: a README line is not rewrapped when a name makes it longer.
    fmt: { lineWidth: 100, proseWrap: "preserve" },
  };
  return [
    { path: "deno.json", text: `${JSON.stringify(config, null, 2)}\n` },
    { path: "operator.ts", text: operatorModule(name, domain) },
    { path: "catalog.ts", text: CATALOG_MODULE },
    { path: "main.ts", text: mainModule(name) },
    { path: "crds.ts", text: CRDS_MODULE },
    { path: "crds_test.ts", text: CRDS_TEST },
    { path: "README.md", text: readme(name, domain, runtime) },
    { path: ".gitignore", text: "/dist/\n" },
  ];
}

function operatorModule(name: string, domain: string): string {
  return `/** Who ${name} is: the names it gives itself in a cluster (see defineOperator). */
import { defineOperator, type OperatorIdentity } from "ptemplate-operator/mod.ts";
import denoJson from "./deno.json" with { type: "json" };

/**
 * Its Lease, RBAC objects, ServiceAccount, field managers, labels, annotations and finalizers all
 * follow from these: two operators in one cluster must differ in name or domain.
 */
export const OPERATOR: OperatorIdentity = defineOperator({
  name: "${name}",
  domain: "${domain}",
  version: denoJson.version,
  description: "a Kubernetes operator",
});
`;
}

/** The catalog `new plugin` adds to: an import after the last, an entry before the `];`. */
const CATALOG_MODULE =
  `/** The plugins this operator carries, with their CRDs: \`deno task new plugin <Kind>\` adds one. */
import type { CatalogEntry } from "ptemplate-operator/cli/operator.ts";

export const CATALOG: CatalogEntry[] = [
];
`;

function mainModule(name: string): string {
  return `/** ${name}: its plugins on the ptemplate-operator runtime, as one command line. */
import { runOperator } from "ptemplate-operator/cli/operator.ts";
import { CATALOG } from "./catalog.ts";
import { OPERATOR } from "./operator.ts";

// No top-level await: a \`--plugin\` module that imports this one would wait for it forever.
if (import.meta.main) {
  runOperator(Deno.args, { operator: OPERATOR, catalog: CATALOG }).then((code) => Deno.exit(code));
}
`;
}

const CRDS_MODULE =
  `/** \`deno task crds\`: writes crds/<name>.yaml and each kind's types, from the CRDs of catalog.ts. */
import {
  type CrdFile,
  crdFiles,
  typeFiles,
  typesBesidePlugin,
  writeFiles,
} from "ptemplate-operator/cli/crd_files.ts";
import { CATALOG } from "./catalog.ts";

/** What \`deno task crds\` writes: the CRDs' YAML, and each kind's types beside its plugin. */
export function generatedFiles(): CrdFile[] {
  return [...crdFiles(CATALOG, "catalog.ts"), ...typeFiles(CATALOG, typesBesidePlugin)];
}

if (import.meta.main) await writeFiles(generatedFiles(), new URL("./", import.meta.url));
`;

const CRDS_TEST = `import { expect } from "expect";
import { staleFiles } from "ptemplate-operator/cli/crd_files.ts";
import { generatedFiles } from "./crds.ts";

Deno.test("crds/ and each kind's types match their CRD sources (run \`deno task crds\` if not)", async () => {
  expect(await staleFiles(generatedFiles(), new URL("./", import.meta.url))).toEqual([]);
});
`;

function readme(name: string, domain: string, runtime: string): string {
  return `# ${name}

A Kubernetes operator on the [ptemplate-operator](https://github.com/ptemplate/ptemplate-operator)
runtime, imported from \`${runtime}\`. Its kinds are in \`${domain}\`; its name and domain make
every name it gives itself in a cluster (\`operator.ts\`).

\`\`\`sh
deno task new plugin Backup   # a kind, its CRD and generated types, a plugin, its tests
deno task test                # unit tests, and integration tests against a real control plane
deno task start rbac          # the RBAC it needs, named after it
deno task start crds          # its CRDs
deno task start install       # its CRDs into the current cluster
deno task start               # run it against the current kubeconfig context
deno task compile             # dist/${name}, one binary
\`\`\`

- \`operator.ts\`: who it is (name, domain, version from deno.json).
- \`catalog.ts\`: its plugins and their CRDs; \`main.ts\` hands both to the runtime's command line.
- \`plugins/<kind>/\`: a kind's CRD source (\`crd.ts\`), its generated types (\`<kind>_types.ts\`),
  the plugin, a unit test with \`reconcileOnce\` and an integration test against \`testing/\`.
- \`deno task crds\` writes \`crds/*.yaml\` and the types from the CRD sources; \`crds_test.ts\`
  fails when they are stale.

The runtime's plugin guide, \`plugins/README.md\` in ptemplate-operator, says what a plugin may do.
`;
}
