/**
 * `new plugin <Kind>`: in an operator made by `new`, a kind of its own (its Resource and CRD
 * source), the plugin that reconciles it, a pure unit test with `reconcileOnce` and an
 * integration test against `testing/`, a sample object in examples/, and its entry in catalog.ts. The generated types and CRD
 * YAML are then written by the operator's own `crds.ts`, the code `deno task crds` runs.
 */
import * as builtIn from "../kube/kinds.ts";
import type { OperatorIdentity } from "../runtime/mod.ts";
import { type CrdFile, pluginFolder } from "./crd_files.ts";

/**
 * Words a kind's variable cannot be (`Class` → `class`), and the names the files below use for
 * something else (`Admin` → `admin`): such a kind's variable gets a suffix, `adminObject`.
 */
const RESERVED = new Set(
  ("admin client configMap configMapName current definePlugin eventually expect integrationTest " +
    "label manager message name namespace outcome plane reconcileOnce running step stop " +
    "break case catch class const continue debugger default delete do else enum export extends " +
    "false finally for function if import in instanceof new null return super switch this throw " +
    "true try typeof var void while with yield let static implements interface package private " +
    "protected public await").split(" "),
);

/**
 * `one` when it fits deno fmt's 100 columns, else `many`, the form deno fmt breaks it into: the
 * files stay as \`deno fmt\` would have them whatever the kind's name.
 */
function fit(one: string, many: string): string {
  return one.split("\n").every((line) => line.length <= 100) ? one : many;
}

/** `import { a, b } from "…";`, on one line when it fits. */
function importLine(names: string[], from: string, type = false): string {
  const keyword = type ? "import type" : "import";
  return fit(
    `${keyword} { ${names.join(", ")} } from "${from}";`,
    `${keyword} {\n${names.map((n) => `  ${n},\n`).join("")}} from "${from}";`,
  );
}

/** The names a kind's files use, from its Kind. */
export interface KindNames {
  /** `BackupSchedule` */
  kind: string;
  /** `backupschedules` */
  plural: string;
  /** `backup-schedule`: the plugin, its field manager and label value. */
  plugin: string;
  /** `BACKUP_SCHEDULE`: the Resource constant; `_CRD` its CRD. */
  constant: string;
  /** `backupSchedule`: the object in code; `…Plugin` the plugin. */
  variable: string;
  /** `plugins/backup_schedule`, and `backup_schedule`, the stem of its files. */
  folder: string;
  stem: string;
}

/** The names for `kind`, or a TypeError that says what a Kind must be. */
export function kindNames(kind: string): KindNames {
  if (!/^[A-Z][A-Za-z0-9]{0,62}$/.test(kind)) {
    throw new TypeError(
      `kind "${kind}" must be UpperCamelCase letters and digits, at most 63 (e.g. Backup, ` +
        "BackupSchedule)",
    );
  }
  const { folder, stem } = pluginFolder(kind);
  // What the files import besides the kind's own names: a kind named so would clash with it.
  const imported = ["Resource", "KubeObject", "Unstructured", "Operator", "Plugin"];
  if (stem.toUpperCase() in builtIn || imported.includes(kind)) {
    throw new TypeError(
      `kind "${kind}" is named like something its files import (a built-in kind's constant, or ` +
        `${imported.join(", ")}): pick another name (e.g. ${kind}Request)`,
    );
  }
  const lower = kind.toLowerCase();
  const variable = stem.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
  const plural = /(s|x|z|ch|sh)$/.test(lower)
    ? `${lower}es`
    : /[^aeiou]y$/.test(lower)
    ? `${lower.slice(0, -1)}ies`
    : `${lower}s`;
  return {
    kind,
    plural,
    plugin: stem.replaceAll("_", "-"),
    constant: stem.toUpperCase(),
    variable: RESERVED.has(variable) ? `${variable}Object` : variable,
    folder,
    stem,
  };
}

/** The source files of a new kind and its plugin (not its generated types and YAML). */
export function pluginFiles(operator: OperatorIdentity, names: KindNames): CrdFile[] {
  const { folder } = names;
  return [
    { path: `${folder}/crd.ts`, text: crdModule(operator, names) },
    { path: `${folder}/${names.stem}.ts`, text: pluginModule(names) },
    { path: `${folder}/mod.ts`, text: modModule(names) },
    { path: `${folder}/${names.stem}_test.ts`, text: unitTest(operator, names) },
    { path: `${folder}/${names.stem}_integration_test.ts`, text: integrationTest(names) },
    { path: `examples/${names.stem}.yaml`, text: sample(operator, names) },
  ];
}

/** A sample object of the kind, for `kubectl apply -f examples/` (and the OLM bundle's examples). */
function sample(operator: OperatorIdentity, n: KindNames): string {
  return `# A sample ${n.kind}: \`kubectl apply -f examples/${n.stem}.yaml\`, then \`kubectl get ${n.plural}\`.
apiVersion: ${operator.domain}/v1alpha1
kind: ${n.kind}
metadata:
  name: sample
spec:
  message: hello from the ${n.plugin} plugin
`;
}

/**
 * catalog.ts with the kind's plugin added: its import after the last import, its entry before
 * the catalog's closing `];`. Undefined when the file is no longer shaped so (say what to add).
 */
export function withCatalogEntry(catalog: string, names: KindNames): string | undefined {
  const lines = catalog.split("\n");
  const start = lines.findIndex((l) => /^export const CATALOG\b.*= \[$/.test(l));
  const end = lines.findIndex((l, i) => i > start && l === "];");
  // After the imports: the end of the last statement before the list.
  let afterImports = start;
  while (afterImports > 0 && lines[afterImports - 1].trim() === "") afterImports--;
  if (start < 0 || end < 0 || !/ from "[^"]+";$/.test(lines[afterImports - 1] ?? "")) {
    return undefined;
  }
  const { constant, variable } = names;
  const entry = [
    `plugin: ${variable}Plugin`,
    `crds: [${constant}_CRD]`,
    "enabledByDefault: true",
  ];
  lines.splice(
    end,
    0,
    fit(`  { ${entry.join(", ")} },`, `  {\n${entry.map((e) => `    ${e},\n`).join("")}  },`),
  );
  lines.splice(
    afterImports,
    0,
    importLine([`${constant}_CRD`, `${variable}Plugin`], `./${names.folder}/mod.ts`),
  );
  return lines.join("\n");
}

/** The catalog entry of the kind's plugin, as catalog.ts lists it. */
export function catalogEntry(names: KindNames): string {
  return `{ plugin: ${names.variable}Plugin, crds: [${names.constant}_CRD], enabledByDefault: true }`;
}

function crdModule(operator: OperatorIdentity, n: KindNames): string {
  return `/** The \`${n.kind}\` custom resource (${operator.domain}/v1alpha1): its kind, type and CRD. */
import {
  type CrdOptions,
  customResourceDefinition,
  type KubeObject,
  type Resource,
  type Unstructured,
} from "ptemplate-operator/mod.ts";
${importLine([`${n.kind}Spec`, `${n.kind}Status`], `./${n.stem}_types.ts`, true)}

${
    fit(
      `export const ${n.constant}: Resource<${n.kind}, true> = {`,
      `export const ${n.constant}: Resource<\n  ${n.kind},\n  true\n> = {`,
    )
  }
  group: "${operator.domain}",
  version: "v1alpha1",
  kind: "${n.kind}",
  plural: "${n.plural}",
  namespaced: true,
};

/** A ${n.kind} as stored; its spec and status types are generated from the schema below. */
export interface ${n.kind} extends KubeObject {
  spec: ${n.kind}Spec;
  status?: ${n.kind}Status;
}

/**
 * What the API server accepts: validate here (types, bounds, CEL rules with messages), and an
 * invalid ${n.kind} never reaches the plugin. \`deno task crds\` writes the YAML and the types.
 */
const schema: CrdOptions = {
  spec: {
    type: "object",
    required: ["message"],
    properties: {
      message: {
        type: "string",
        minLength: 1,
        maxLength: 1024,
        description: "What the ${n.kind}'s ConfigMap holds.",
      },
    },
  },
  status: {
    configMap: {
      type: "string",
      description: "The ConfigMap made for this ${n.kind}.",
    },
  },
};

${
    fit(
      `export const ${n.constant}_CRD: Unstructured = customResourceDefinition(${n.constant}, schema);`,
      `export const ${n.constant}_CRD: Unstructured = customResourceDefinition(\n  ${n.constant},\n  schema,\n);`,
    )
  }
`;
}

function pluginModule(n: KindNames): string {
  return `/** The \`${n.plugin}\` plugin: a ${n.kind} becomes a ConfigMap holding its message. */
import { CONFIG_MAP, definePlugin } from "ptemplate-operator/mod.ts";
import { ${n.constant} } from "./crd.ts";

export const ${n.variable}Plugin = definePlugin({
  name: "${n.plugin}",
  for: ${n.constant},
  owns: [CONFIG_MAP],
  reconcile(${n.variable}) {
${
    fit(
      `    const configMapName = \`\${${n.variable}.metadata.name}-${n.plugin}\`;`,
      `    const configMapName =\n      \`\${${n.variable}.metadata.name}-${n.plugin}\`;`,
    )
  }
    return {
      children: [{
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: configMapName },
        data: { message: ${n.variable}.spec.message },
      }],
      status: { configMap: configMapName },
    };
  },
});
`;
}

function modModule(n: KindNames): string {
  return `/** The ${n.kind} kind and its plugin. */
export * from "./crd.ts";
export * from "./${n.stem}.ts";
`;
}

function unitTest(operator: OperatorIdentity, n: KindNames): string {
  return `import { expect } from "expect";
import { reconcileOnce } from "ptemplate-operator/mod.ts";
${importLine([`${n.variable}Plugin`], `./${n.stem}.ts`)}
${importLine([n.kind], "./crd.ts", true)}

Deno.test("it asks for one ConfigMap with its message, and names it in its status", async () => {
  const ${n.variable}: ${n.kind} = {
    apiVersion: "${operator.domain}/v1alpha1",
    kind: "${n.kind}",
    metadata: { name: "nightly", namespace: "demo" },
    spec: { message: "hello" },
  };
${
    fit(
      `  const { outcome } = await reconcileOnce(${n.variable}Plugin, ${n.variable});`,
      `  const { outcome } = await reconcileOnce(\n    ${n.variable}Plugin,\n    ${n.variable},\n  );`,
    )
  }
  expect(outcome).toEqual({
    children: [{
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "nightly-${n.plugin}" },
      data: { message: "hello" },
    }],
    status: { configMap: "nightly-${n.plugin}" },
  });
  // The outcome is typed by the kind: its status is ${n.kind}Status, no cast.
${
    fit(
      `  expect(outcome.status?.configMap).toBe("nightly-${n.plugin}");`,
      `  expect(outcome.status?.configMap).toBe(\n    "nightly-${n.plugin}",\n  );`,
    )
  }
});
`;
}

function integrationTest(n: KindNames): string {
  const ns = `${n.plugin}-test`.slice(0, 63);
  return `/** The ${n.plugin} plugin against a real API server, run as this operator (its names, its RBAC). */
import { expect } from "expect";
import { CONFIG_MAP, NAMESPACE } from "ptemplate-operator/mod.ts";
import { KubeClient, Manager } from "ptemplate-operator/operator.ts";
import { eventually, integrationTest } from "ptemplate-operator/testing/mod.ts";
import { OPERATOR } from "../../operator.ts";
${importLine([`${n.variable}Plugin`], `./${n.stem}.ts`)}
${importLine([n.constant, `${n.constant}_CRD`], "./crd.ts")}

await integrationTest(
  "${n.plugin} plugin against a real API server",
  { crds: [${n.constant}_CRD] },
  async (plane, step) => {
    const admin = plane.client();
    const namespace = "${ns}";
    await admin.create(NAMESPACE, { metadata: { name: namespace } });
    const client = new KubeClient(plane.adminConfig, { userAgent: OPERATOR.userAgent });
    const manager = new Manager({
      operator: OPERATOR,
      client,
      plugins: [${n.variable}Plugin],
    });
    const stop = new AbortController();
    const running = manager.run(stop.signal);
    try {
      await step("it makes the ConfigMap, labelled as this operator's, and a status", async () => {
        await admin.create(${n.constant}, {
          metadata: { name: "nightly", namespace },
          spec: { message: "hello" },
        });
        const name = "nightly-${n.plugin}";
        const configMap = await eventually(() => admin.get(CONFIG_MAP, name, { namespace }));
        expect(configMap.data).toEqual({ message: "hello" });
        const label = configMap.metadata.labels?.[OPERATOR.pluginLabel];
        expect(label).toBe("${n.plugin}");
        await eventually(async () => {
${
    fit(
      `          const current = await admin.get(${n.constant}, "nightly", { namespace });`,
      `          const current = await admin.get(${n.constant}, "nightly", {\n            namespace,\n          });`,
    )
  }
          expect(current.status?.configMap).toBe(name);
        });
      });
      await step("a new message reaches the ConfigMap", async () => {
        const message = { spec: { message: "hello again" } };
${
    fit(
      `        await admin.patch(${n.constant}, "nightly", message, { namespace });`,
      `        await admin.patch(${n.constant}, "nightly", message, {\n          namespace,\n        });`,
    )
  }
        await eventually(async () => {
          const name = "nightly-${n.plugin}";
          const configMap = await admin.get(CONFIG_MAP, name, { namespace });
          expect(configMap.data).toEqual({ message: "hello again" });
        });
      });
    } finally {
      stop.abort();
      await running;
      client.close();
    }
  },
);
`;
}
