import { expect } from "expect";
import { CONFIG_MAP, definePlugin, DEPLOYMENT, NAMESPACE } from "../../mod.ts";
import { ownedCrds } from "./owned_crds.ts";

const schema = (description: string) => ({
  openAPIV3Schema: {
    description,
    properties: {
      spec: { properties: { requiredDevices: { description: "Devices each node needs." } } },
      status: { properties: { conditions: {}, ready: { description: "Nodes ready." } } },
    },
  },
});
const BACKUP_CRD = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "backups.example.com" },
  spec: {
    group: "example.com",
    names: { kind: "Backup", plural: "backups" },
    versions: [
      { name: "v1alpha1", storage: false, schema: schema("The old Backup.") },
      { name: "v1", storage: true, schema: schema("A copy of a volume.") },
    ],
  },
};
const plugin = (name: string, owns: (typeof DEPLOYMENT | typeof CONFIG_MAP)[]) =>
  definePlugin({ name, for: NAMESPACE, owns, reconcile: () => {} });

Deno.test("an owned CRD: stored version, names, a descriptor per field, what its plugins make", () => {
  const catalog = [
    { plugin: plugin("a", [DEPLOYMENT]), crds: [BACKUP_CRD], enabledByDefault: true },
    { plugin: plugin("b", [DEPLOYMENT, CONFIG_MAP]), crds: [BACKUP_CRD], enabledByDefault: false },
    { plugin: plugin("unrelated", [CONFIG_MAP]), crds: [], enabledByDefault: true },
  ];
  expect(ownedCrds(catalog)).toEqual([{
    name: "backups.example.com",
    version: "v1",
    kind: "Backup",
    displayName: "Backup",
    description: "A copy of a volume.",
    resources: [
      { kind: "Deployment", name: "deployments.apps", version: "v1" },
      { kind: "ConfigMap", name: "configmaps", version: "v1" },
    ],
    specDescriptors: [
      {
        path: "requiredDevices",
        displayName: "Required Devices",
        description: "Devices each node needs.",
      },
    ],
    statusDescriptors: [
      {
        path: "conditions",
        displayName: "Conditions",
        description: "",
        "x-descriptors": ["urn:alm:descriptor:io.kubernetes.conditions"],
      },
      { path: "ready", displayName: "Ready", description: "Nodes ready." },
    ],
  }]);
});

Deno.test("a CRD without a schema or a description still gets one, and no descriptors", () => {
  const bare = {
    metadata: { name: "switches.example.com" },
    spec: { names: { kind: "Switch" }, versions: [{ name: "v1", storage: true }] },
  };
  expect(ownedCrds([{ plugin: plugin("s", []), crds: [bare], enabledByDefault: true }])).toEqual([{
    name: "switches.example.com",
    version: "v1",
    kind: "Switch",
    displayName: "Switch",
    description: "A Switch.",
    resources: [],
    specDescriptors: [],
    statusDescriptors: [],
  }]);
});
