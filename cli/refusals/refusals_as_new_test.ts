import { expect } from "expect";
import { PTEMPLATE_CRD } from "../../crds/ptemplate.ts";
import { PTEMPLATE_VERSIONS_CRD } from "../../crds/ptemplate_conversion.ts";
import type { KubeObject } from "../../kube/mod.ts";
import { builtInCatalog, crdsOf } from "../plugin_loading/plugin_catalog.ts";
import { refusalsAsNew } from "./refusals_as_new.ts";

const WORKER = { "node-role.kubernetes.io/worker": "worker" };
const ptemplate = (spec: Record<string, unknown>, metadata: Record<string, unknown> = {}) =>
  ({
    apiVersion: "pt.example.com/v1alpha1",
    kind: "Ptemplate",
    metadata: { name: "pt", namespace: "default", ...metadata },
    spec,
  }) as KubeObject;

Deno.test("a Ptemplate that fits today's rules has nothing to fix", async () => {
  expect(await refusalsAsNew(PTEMPLATE_CRD, ptemplate({ selector: WORKER }))).toEqual([]);
  expect(
    await refusalsAsNew(
      PTEMPLATE_CRD,
      ptemplate({
        selector: WORKER,
        maxdev: 8,
        requiredDevices: 2,
        defaultmsg: "hello",
        consumerimage: "quay.io/org/consumer:1",
        imageRepoSecret: { name: "pull" },
      }),
    ),
  ).toEqual([]);
});

Deno.test("each rule a stored Ptemplate breaks is named with its field", async () => {
  const cases: [Record<string, unknown>, Record<string, unknown>, string][] = [
    [{ selector: WORKER }, { name: "x".repeat(60) }, "the object: metadata.name must be at most"],
    [
      { selector: WORKER, maxdev: 4, requiredDevices: 8 },
      {},
      "spec.requiredDevices: spec.requiredDevices must not exceed",
    ],
    [{ selector: { "Bad Key": "x" } }, {}, "spec.selector: spec.selector keys must be label keys"],
    [
      { selector: { zone: "-bad-" } },
      {},
      "spec.selector: spec.selector values must be label values",
    ],
    [{ selector: {} }, {}, "spec.selector: spec.selector must name at least one node label"],
    [{ selector: WORKER, defaultmsg: "two words" }, {}, "spec.defaultmsg: spec.defaultmsg must be"],
    [
      { selector: WORKER, defaultmsg: "m".repeat(70) },
      {},
      "spec.defaultmsg: must be at most 64 characters",
    ],
    [{ selector: WORKER, maxdev: 300 }, {}, "spec.maxdev: spec.maxdev must be between 1 and 256"],
    [
      { selector: WORKER, consumer: "a", consumerimage: "b" },
      {},
      "spec.consumer: set spec.consumerimage",
    ],
    [
      { selector: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`l${i}`, "v"])) },
      {},
      "spec.selector: must have at most 16 fields",
    ],
  ];
  for (const [spec, metadata, words] of cases) {
    const found = await refusalsAsNew(PTEMPLATE_CRD, ptemplate(spec, metadata));
    expect({ spec, found }).toEqual({
      spec,
      found: expect.arrayContaining([expect.stringContaining(words)]),
    });
    expect(found.filter((p) => p.includes("not checked here"))).toEqual([]);
  }
});

Deno.test("an entry without a value in kubectl's last apply is named by its key", async () => {
  const applied = JSON.stringify({ spec: { selector: { ...WORKER, zone: null } } });
  const found = await refusalsAsNew(
    PTEMPLATE_CRD,
    ptemplate({ selector: WORKER }, {
      annotations: { "kubectl.kubernetes.io/last-applied-configuration": applied },
    }),
  );
  expect(found).toEqual([expect.stringContaining("spec.selector key zone has no value")]);
});

Deno.test("a v1beta1 object is judged by v1beta1's rules", async () => {
  const beta = {
    apiVersion: "pt.example.com/v1beta1",
    kind: "Ptemplate",
    metadata: { name: "pt", namespace: "default" },
    spec: { selector: WORKER, maxDevices: 2, requiredDevices: 3 },
  } as KubeObject;
  expect(await refusalsAsNew(PTEMPLATE_VERSIONS_CRD, beta)).toEqual([
    expect.stringContaining("spec.requiredDevices must not exceed spec.maxDevices"),
  ]);
});

Deno.test("every rule of every CRD this binary carries can be checked here", async () => {
  // An empty object meets each rule it can: none may come back "not checked".
  for (const crd of [...crdsOf(builtInCatalog()), PTEMPLATE_VERSIONS_CRD]) {
    const spec = crd.spec as {
      group: string;
      names: { kind: string };
      versions: { name: string }[];
    };
    for (const version of spec.versions) {
      const found = await refusalsAsNew(crd, {
        apiVersion: `${spec.group}/${version.name}`,
        kind: spec.names.kind,
        metadata: { name: "x" },
        spec: {},
      } as KubeObject);
      expect(found.filter((p) => p.includes("not checked here"))).toEqual([]);
    }
  }
});
