/** The plugins this binary carries, by name, with the CRDs each needs and which run by default. */
import type { Unstructured } from "../kube/mod.ts";
import type { Conversion, Plugin } from "../runtime/mod.ts";
import { type ConversionClientConfig, PTEMPLATE, PTEMPLATE_CRD } from "../crds/ptemplate.ts";
import { convertPtemplate, PTEMPLATE_VERSIONS_CRD } from "../crds/ptemplate_conversion.ts";
import { GUEST_CRD, guestbookPlugin } from "../plugins/guestbook/mod.ts";
import { MEMCACHED_CRD, memcachedPlugin } from "../plugins/memcached/mod.ts";
import { MACHINE_CRD, SWITCH_CRD, uselessMachinePlugin } from "../plugins/useless_machine/mod.ts";
import { PTEMPLATE_PLUGINS } from "../reconcilers/mod.ts";
import { UsageError } from "./flags.ts";
import type { PluginSource } from "./plugin_loading.ts";

/** A plugin a binary carries, with the CRDs it needs and whether it runs by default. */
export interface CatalogEntry {
  /** The plugin, from `definePlugin`. */
  plugin: Plugin;
  /** CRDs the plugin's own kinds need (`install` applies them). */
  crds: Unstructured[];
  /** Runs unless `--plugins` says otherwise. */
  enabledByDefault: boolean;
  /**
   * How its CRDs' objects change between versions, served at the webhooks' `/convert`; each
   * with its CRD as installed where that is served (more versions than `crds` has).
   */
  conversions?: Conversion[];
  /**
   * Where a `--plugin` plugin was loaded from (a Worker loads it from there too). Set by the
   * command line's loader; a catalog leaves it out.
   * @ignore
   */
  source?: PluginSource;
}

/** The Ptemplate's versions, converted by the conversion webhook. */
export const PTEMPLATE_CONVERSION: Conversion = {
  group: PTEMPLATE.group,
  kind: PTEMPLATE.kind,
  crd: PTEMPLATE_VERSIONS_CRD,
  convert: convertPtemplate,
};

export function builtInCatalog(): CatalogEntry[] {
  return [
    ...PTEMPLATE_PLUGINS.map((plugin) => ({
      plugin: plugin,
      crds: [PTEMPLATE_CRD],
      enabledByDefault: true,
      conversions: [PTEMPLATE_CONVERSION],
    })),
    // The example plugins of the other seeds: enable with --plugins=+memcached,+useless-machine.
    // And the finalizer example: --plugins=+guestbook.
    { plugin: memcachedPlugin, crds: [MEMCACHED_CRD], enabledByDefault: false },
    {
      plugin: uselessMachinePlugin,
      crds: [MACHINE_CRD, SWITCH_CRD],
      enabledByDefault: false,
    },
    { plugin: guestbookPlugin, crds: [GUEST_CRD], enabledByDefault: false },
  ];
}

/**
 * The catalog once `--plugin` modules are loaded: their plugins are then the default set, and the
 * carried ones (the Ptemplate plugins) run beside them only when `--plugins` asks
 * (`--plugins +kmm-module`). A `--plugin` runs what it names, nothing more. A loaded plugin named
 * like a carried one replaces it: a plugin's next version, rehearsed or run in its place.
 */
export function withLoadedPlugins(
  carried: CatalogEntry[],
  loaded: CatalogEntry[],
): CatalogEntry[] {
  if (!loaded.length) return carried;
  const names = new Set(loaded.map((entry) => entry.plugin.name));
  return [
    ...carried.filter((entry) => !names.has(entry.plugin.name))
      .map((entry) => ({ ...entry, enabledByDefault: false })),
    ...loaded,
  ];
}

/**
 * Which plugins run. `--plugins a,b` names the exact set; `--plugins -a,+c` edits the default
 * set. Unknown names are an error that lists the known ones.
 */
export function selectPlugins(
  catalog: CatalogEntry[],
  requested: string[] | undefined,
): CatalogEntry[] {
  const names = catalog.map((e) => e.plugin.name);
  const unknown = (requested ?? []).map((r) => r.replace(/^[-+]/, "")).filter((n) =>
    !names.includes(n)
  );
  if (unknown.length) {
    throw new UsageError(
      `--plugins: unknown plugin ${unknown.join(", ")}; known: ${names.join(", ")}`,
    );
  }
  let enabled: Set<string>;
  if (!requested?.length) {
    enabled = new Set(catalog.filter((e) => e.enabledByDefault).map((e) => e.plugin.name));
  } else if (requested.every((r) => /^[-+]/.test(r))) {
    enabled = new Set(catalog.filter((e) => e.enabledByDefault).map((e) => e.plugin.name));
    for (const r of requested) {
      r.startsWith("-") ? enabled.delete(r.slice(1)) : enabled.add(r.slice(1));
    }
  } else if (requested.some((r) => /^[-+]/.test(r))) {
    throw new UsageError(
      "--plugins: either name the exact set (a,b) or edit the default (-a,+b), not both",
    );
  } else {
    enabled = new Set(requested);
  }
  const selected = catalog.filter((e) => enabled.has(e.plugin.name));
  if (!selected.length) throw new UsageError("--plugins leaves no plugin to run");
  return selected;
}

/** The distinct CRDs the selected plugins need. */
export function crdsOf(entries: CatalogEntry[]): Unstructured[] {
  const byName = new Map<string, Unstructured>();
  for (const entry of entries) for (const crd of entry.crds) byName.set(crd.metadata!.name!, crd);
  return [...byName.values()];
}

/**
 * The distinct CRDs of `entries`, those with a conversion webhook as installed when it is served
 * (at `clientConfig`), the others as `crds` has them.
 */
export function crdsWithConversion(
  entries: CatalogEntry[],
  clientConfig: ConversionClientConfig,
): Unstructured[] {
  const converted = new Map<string, Unstructured>();
  for (const { crd } of entries.flatMap((e) => e.conversions ?? [])) {
    if (!crd) continue;
    const served = structuredClone(crd) as Unstructured & {
      spec: { conversion: { webhook: { clientConfig?: ConversionClientConfig } } };
    };
    served.spec.conversion.webhook.clientConfig = clientConfig;
    converted.set(served.metadata!.name!, served);
  }
  return crdsOf(entries).map((crd) => converted.get(crd.metadata!.name!) ?? crd);
}

/** The CRDs whose versions the webhooks convert, by name, once each. */
export function conversionCrdNames(entries: CatalogEntry[]): string[] {
  return crdsOf(entries.filter((e) => e.conversions?.length)).map((crd) => crd.metadata!.name!);
}
