/**
 * `new <dir>`: the files of an operator repository of its own on this runtime (its identity, an
 * empty catalog, its command line, the tasks to test, run, compile, bundle and install it and to
 * write its CRDs and RBAC, its deploy/, Containerfile and workflows, a README), importing the
 * runtime from a checkout or a release URL.
 */
import denoJson from "../../deno.json" with { type: "json" };
import { defineOperator } from "../../runtime/mod.ts";
import type { CrdFile } from "../manifests/crd_files.ts";
import { permissionFlags } from "./permission_set_flags.ts";
import { RBAC_FILE, rbacFile } from "../manifests/rbac_file.ts";
import { CRDS_MODULE, CRDS_TEST, DEPLOY_TEST } from "./scaffold_checks.ts";
import { deployFiles } from "./scaffold_deploy.ts";
import { workflowFiles } from "./scaffold_workflows.ts";
import { DENO_VERSION } from "../release/version.ts";

export { RELEASE_URL } from "../release/runtime_reference.ts";

/** The version a new operator starts at. */
const FIRST_VERSION = "0.1.0";

/**
 * The packages an own operator's import map names: every one of ours (deno.json), not a list kept
 * by hand. The runtime loads some only behind a dynamic import (YAML, X.509, CEL, the module
 * lexer), so a package missing from the map fails late, in a user's cluster; one the operator
 * never imports costs nothing, since Deno fetches a package only when something imports it.
 */
export const RUNTIME_IMPORTS: readonly string[] = Object.keys(denoJson.imports)
  .filter((name) => name !== "ptemplate-operator/");

/** The import map of an operator that imports the runtime from `runtime`. */
export function importsFor(runtime: string): Record<string, string> {
  const ours: Record<string, string> = denoJson.imports;
  return {
    "ptemplate-operator/": runtime,
    ...Object.fromEntries(RUNTIME_IMPORTS.map((name) => [name, ours[name]])),
  };
}

/**
 * The permission flags of one of our tasks (its set written out), with its V8 flags and runtime
 * options, without its module. Flags, not a copy of our sets: config permissions are experimental
 * in Deno 2.9 (a warning on every run), and the new repository's Containerfile and workflows run
 * its commands as written.
 */
function permissionsOf(task: "start" | "compile" | "test" | "bundle"): string {
  const command = denoJson.tasks[task].command;
  const options = command.split(/\s+/).filter((word) =>
    /^--v8-flags=--max|^--no-code-cache$/.test(word)
  );
  return [...options, ...permissionFlags(command, denoJson.permissions)].join(" ");
}

/**
 * `flags` with the runtime's host added to `--allow-net` (or an `--allow-net` for it) when the
 * runtime is a URL: what reads the runtime's own files (the test harness's toolchain, the bundle's
 * deploy/core) reads them over the network then.
 */
function withRuntimeHost(flags: string, runtime: string): string {
  if (!/^https?:/.test(runtime)) return flags;
  const host = new URL(runtime).host;
  return /--allow-net=/.test(flags)
    ? flags.replace(/--allow-net=(\S+)/, `--allow-net=$1,${host}`)
    : `${flags} --allow-net=${host}`;
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
  const operator = defineOperator({ name, domain, version: FIRST_VERSION });
  const start = `deno run ${permissionsOf("start")} main.ts`;
  const config = {
    version: FIRST_VERSION,
    tasks: {
      test: {
        description:
          "Unit and integration tests (integration tests start a real control plane: Go 1.26 or KUBEBUILDER_ASSETS the first time)",
        // The test harness reads its toolchain and kwok's stages from the runtime: over the
        // network when that is a URL.
        command: `deno test ${withRuntimeHost(permissionsOf("test"), runtime)}`,
      },
      check: "deno check . && deno fmt --check && deno lint",
      start: {
        description:
          "Run the operator (the compiled binary's permissions; `start --help` for more)",
        command: start,
      },
      compile: {
        description: `Build the single binary dist/${name}`,
        command: `deno compile ${
          permissionsOf("compile")
        } --exclude-unused-npm --include ${runtime}runtime/isolation/plugin_worker.ts --output dist/${name} main.ts`,
      },
      crds: {
        description:
          `Write what catalog.ts makes: crds/*.yaml, each kind's types, and ${RBAC_FILE}`,
        command: "deno run --allow-read --allow-write=crds,plugins,deploy/rbac crds.ts",
      },
      rbac: {
        description: `Print the RBAC and leader fence it needs (what ${RBAC_FILE} holds)`,
        command: `${start} rbac`,
      },
      install: {
        description: "Install its CRDs into the current kubeconfig context's cluster",
        command: `${start} install`,
      },
      bundle: {
        description:
          "Write the OLM bundle (bundle/, bundle.Dockerfile) and catalog/ (flags: --version, --image, --bundle-image, --replaces)",
        // The bundle is made from the runtime's deploy/core: over the network when that is a URL.
        command: `deno run ${withRuntimeHost(permissionsOf("bundle"), runtime)} main.ts bundle`,
      },
      new: {
        description: "new plugin <Kind>: a kind, its CRD and types, a plugin and its tests",
        command:
          `deno run --allow-read --allow-write=plugins,catalog.ts,crds,deploy/rbac,examples ${runtime}main.ts new`,
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
    { path: "deploy_test.ts", text: DEPLOY_TEST },
    ...deployFiles(operator, runtime),
    rbacFile([], operator),
    ...workflowFiles(name, DENO_VERSION),
    { path: "README.md", text: readme(name, domain, runtime) },
    { path: ".gitignore", text: "/dist/\n/bundle/\n/bundle.Dockerfile\n/catalog/\n" },
  ];
}

function operatorModule(name: string, domain: string): string {
  return `/** Who ${name} is: the names it gives itself in a cluster (see defineOperator). */
import {
  defineOperator,
  type OperatorIdentity,
  PTEMPLATE_OPERATOR,
} from "ptemplate-operator/operator.ts";
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
  // Children a prototype made when its plugin ran under ptemplate-operator (\`--plugin\`) become
  // this operator's at their next reconcile: their field sets, without their old label. Add this
  // operator's earlier identity here when renaming it.
  takesOverFrom: [PTEMPLATE_OPERATOR],
});
`;
}

/** The catalog `new plugin` adds to: an import after the last, an entry before the `];`. */
const CATALOG_MODULE =
  `/** The plugins this operator carries, with their CRDs: \`deno task new plugin <Kind>\` adds one. */
import type { CatalogEntry } from "ptemplate-operator/operator.ts";

export const CATALOG: CatalogEntry[] = [
  // \`deno task new plugin <Kind>\` adds each kind's entry here.
];
`;

function mainModule(name: string): string {
  return `/** ${name}: its plugins on the ptemplate-operator runtime, as one command line. */
import { runOperator } from "ptemplate-operator/operator.ts";
import { CATALOG } from "./catalog.ts";
import { OPERATOR } from "./operator.ts";

// No top-level await: a \`--plugin\` module that imports this one would wait for it forever.
if (import.meta.main) {
  runOperator(Deno.args, { operator: OPERATOR, catalog: CATALOG }).then((code) => Deno.exit(code));
}
`;
}

function readme(name: string, domain: string, runtime: string): string {
  return `# ${name}

A Kubernetes operator on the [ptemplate-operator](https://github.com/ptemplate/ptemplate-operator)
runtime, imported from \`${runtime}\`. Its kinds are in \`${domain}\`; its name and domain make
every name it gives itself in a cluster (\`operator.ts\`).

\`\`\`sh
deno task new plugin Backup   # a kind, its CRD and generated types, a plugin, its tests, a sample
deno task check               # types, format, lint: a plugin is type-checked before it ships
deno task test                # unit and integration tests, its deploy rendered, its bundle validated
deno task crds                # after a schema or permission change: crds/, types, deploy/rbac/
deno task start               # run it against the current kubeconfig context
\`\`\`

On a cluster (what kubebuilder's \`make install\`, \`make deploy\` and \`make bundle\` do):

\`\`\`sh
deno task install                        # its CRDs
kubectl apply -k deploy                  # namespace, ServiceAccount, RBAC, leader fence, Deployment
kubectl apply -f examples/               # the samples new plugin wrote
deno task compile                        # dist/${name}, one binary
docker buildx build -f Containerfile .   # the image (see the Containerfile's first lines)
deno task bundle --version 0.1.0 --image IMAGE@DIGEST   # the OLM bundle
\`\`\`

- \`operator.ts\`: who it is (name, domain, version from deno.json; the identities whose objects it
  takes over).
- \`catalog.ts\`: its plugins and their CRDs; \`main.ts\` hands both to the runtime's command line.
- \`plugins/<kind>/\`: a kind's CRD source (\`crd.ts\`), its generated types (\`<kind>_types.ts\`),
  the plugin, a unit test with \`reconcileOnce\` and an integration test against \`testing/\`.
- \`deploy/\`: the kustomize base (\`deploy/rbac/rbac.yaml\` is generated by \`deno task crds\`) and
  \`deploy/monitoring\` (a ServiceMonitor); \`Containerfile\`; \`.github/workflows/\`: CI, and a
  release from a \`vX.Y.Z\` tag equal to deno.json's version (binaries, image, bundle).
- \`crds_test.ts\` fails while the generated files are stale; \`deploy_test.ts\` renders and installs
  \`deploy/\` on a real API server and validates the OLM bundle.

The runtime's plugin guide, \`plugins/README.md\` in ptemplate-operator, says what a plugin may do.
`;
}
