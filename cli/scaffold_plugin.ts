/**
 * `new plugin <Kind>`: in an operator made by `new`, a kind of its own (its Resource and CRD
 * source), the plugin that reconciles it, a pure unit test with `reconcileOnce` and an
 * integration test against `testing/`, and its entry in catalog.ts. The generated types and CRD
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
  ("admin client configMap configMapName definePlugin eventually expect integrationTest manager " +
    "namespace outcome plane reconcileOnce running step stop break case catch class const continue debugger default delete do else enum export extends " +
    "false finally for function if import in instanceof new null return super switch this throw " +
    "true try typeof var void while with yield let static implements interface package private " +
    "protected public await").split(" "),
);

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
  ];
}

/**
 * catalog.ts with the kind's plugin added: its import after the last import, its entry before
 * the catalog's closing `];`. Undefined when the file is no longer shaped so (say what to add).
 */
export function withCatalogEntry(catalog: string, names: KindNames): string | undefined {
  const lines = catalog.split("\n");
  const start = lines.findIndex((l) => /^export const CATALOG\b.*= \[$/.test(l));
  const end = lines.findIndex((l, i) => i > start && l === "];");
  const lastImport = lines.findLastIndex((l, i) => i < start && /^import /.test(l));
  if (start < 0 || end < 0 || lastImport < 0) return undefined;
  const { constant, variable } = names;
  lines.splice(end, 0, `  ${catalogEntry(names)},`);
  lines.splice(
    lastImport + 1,
    0,
    `import { ${constant}_CRD, ${variable}Plugin } from "./${names.folder}/mod.ts";`,
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
  customResourceDefinition,
  type KubeObject,
  type Resource,
  type Unstructured,
} from "ptemplate-operator/mod.ts";
import type { ${n.kind}Spec, ${n.kind}Status } from "./${n.stem}_types.ts";

export const ${n.constant}: Resource<${n.kind}, true> = {
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
export const ${n.constant}_CRD: Unstructured = customResourceDefinition(${n.constant}, {
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
    configMap: { type: "string", description: "The ConfigMap made for this ${n.kind}." },
  },
});
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
    const configMapName = \`\${${n.variable}.metadata.name}-${n.plugin}\`;
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
import { ${n.variable}Plugin } from "./${n.stem}.ts";
import type { ${n.kind} } from "./crd.ts";

Deno.test("a ${n.kind} asks for one ConfigMap with its message, and names it in its status", async () => {
  const ${n.variable}: ${n.kind} = {
    apiVersion: "${operator.domain}/v1alpha1",
    kind: "${n.kind}",
    metadata: { name: "nightly", namespace: "demo" },
    spec: { message: "hello" },
  };
  const { outcome } = await reconcileOnce(${n.variable}Plugin, ${n.variable});
  expect(outcome).toEqual({
    children: [{
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "nightly-${n.plugin}" },
      data: { message: "hello" },
    }],
    status: { configMap: "nightly-${n.plugin}" },
  });
});
`;
}

function integrationTest(n: KindNames): string {
  const ns = `${n.plugin}-test`.slice(0, 63);
  return `/** The ${n.plugin} plugin against a real API server, run as this operator (its names, its RBAC). */
import { expect } from "expect";
import { CONFIG_MAP, KubeClient, Manager, NAMESPACE } from "ptemplate-operator/mod.ts";
import { eventually, integrationTest } from "ptemplate-operator/testing/mod.ts";
import { OPERATOR } from "../../operator.ts";
import { ${n.variable}Plugin } from "./${n.stem}.ts";
import { ${n.constant}, ${n.constant}_CRD } from "./crd.ts";

await integrationTest(
  "${n.plugin} plugin against a real API server",
  { crds: [${n.constant}_CRD] },
  async (plane, step) => {
    const admin = plane.client();
    const namespace = "${ns}";
    await admin.create(NAMESPACE, { metadata: { name: namespace } });
    const client = new KubeClient(plane.adminConfig, { userAgent: OPERATOR.userAgent });
    const manager = new Manager({ operator: OPERATOR, client, plugins: [${n.variable}Plugin] });
    const stop = new AbortController();
    const running = manager.run(stop.signal);
    try {
      await step("a ${n.kind} gets its ConfigMap, labelled as this operator's, and a status", async () => {
        await admin.create(${n.constant}, {
          metadata: { name: "nightly", namespace },
          spec: { message: "hello" },
        });
        const configMap = await eventually(() =>
          admin.get(CONFIG_MAP, "nightly-${n.plugin}", { namespace })
        );
        expect(configMap.data).toEqual({ message: "hello" });
        expect(configMap.metadata.labels?.[OPERATOR.pluginLabel]).toBe("${n.plugin}");
        await eventually(async () => {
          const ${n.variable} = await admin.get(${n.constant}, "nightly", { namespace });
          expect(${n.variable}.status?.configMap).toBe("nightly-${n.plugin}");
        });
      });
      await step("a new message reaches the ConfigMap", async () => {
        await admin.patch(${n.constant}, "nightly", { spec: { message: "hello again" } }, {
          namespace,
        });
        await eventually(async () => {
          const configMap = await admin.get(CONFIG_MAP, "nightly-${n.plugin}", { namespace });
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
