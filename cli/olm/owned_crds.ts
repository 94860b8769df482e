/**
 * The CRDs an operator's CSV owns, as OperatorHub shows them: each with its display name, its
 * description, a descriptor per top-level spec and status field, and the kinds its plugins create.
 */
import type { Plugin } from "../../mod.ts";
import { type OpenApiSchema, storedVersion } from "../../kube/custom_resource_definition.ts";
import { type CatalogEntry, crdsOf } from "../plugin_loading/plugin_catalog.ts";

/** One field of an owned CRD, as the CSV describes it. */
interface Descriptor {
  path: string;
  displayName: string;
  description: string;
  "x-descriptors"?: string[];
}

/** One owned CRD, as the CSV's `customresourcedefinitions.owned` lists it. */
export interface Owned {
  name: string;
  version: string;
  kind: string;
  displayName: string;
  description: string;
  resources: { kind: string; name: string; version: string }[];
  specDescriptors: Descriptor[];
  statusDescriptors: Descriptor[];
}

/** "requiredDevices" → "Required Devices". */
function displayName(name: string): string {
  const words = name.replace(/([a-z])([A-Z])/g, "$1 $2");
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** One descriptor per top-level field, with the schema's description. */
function descriptors(schema: OpenApiSchema | undefined, status: boolean): Descriptor[] {
  return Object.entries(schema?.properties ?? {}).map(([path, field]) => ({
    path,
    displayName: displayName(path),
    description: field.description ?? "",
    ...(status && path === "conditions"
      ? { "x-descriptors": ["urn:alm:descriptor:io.kubernetes.conditions"] }
      : {}),
  }));
}

/** The kinds a plugin creates, as the CSV lists them under an owned CRD. */
function resourcesOf(plugins: Plugin[]): Owned["resources"] {
  const seen = new Map<string, Owned["resources"][number]>();
  for (const plugin of plugins) {
    for (const owned of plugin.owns ?? []) {
      const resource = "resource" in owned ? owned.resource : owned;
      seen.set(resource.kind, {
        kind: resource.kind,
        name: `${resource.plural}${resource.group ? `.${resource.group}` : ""}`,
        version: resource.version,
      });
    }
  }
  return [...seen.values()];
}

/** Every CRD of the catalog, as the CSV owns it. */
export function ownedCrds(catalog: CatalogEntry[]): Owned[] {
  return crdsOf(catalog).map((crd) => {
    const spec = crd.spec as { names: { kind: string } };
    const { name: version, schema: root } = storedVersion(crd);
    const plugins = catalog.filter((e) =>
      e.crds.some((c) => c.metadata?.name === crd.metadata?.name)
    )
      .map((e) => e.plugin);
    return {
      name: crd.metadata!.name!,
      version,
      kind: spec.names.kind,
      displayName: displayName(spec.names.kind),
      description: root.description ?? `A ${spec.names.kind}.`,
      resources: resourcesOf(plugins),
      specDescriptors: descriptors(root.properties?.spec, false),
      statusDescriptors: descriptors(root.properties?.status, true),
    };
  });
}
