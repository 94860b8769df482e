/**
 * The version of the plugin API this runtime serves, and whether a plugin written against another
 * version can run on it. Semver-like: the major changes when something a plugin may use changes
 * or goes (a plugin of another major is refused); the minor when something is added (a plugin
 * written against a newer minor may use what this runtime lacks, and is refused; an older minor
 * runs). Patch releases of the operator never change it.
 */

/** A plugin API version: `major.minor`. */
export type PluginApiVersion = `${number}.${number}`;

/**
 * The plugin API this runtime serves; `ptemplate-operator version` prints it. Bump the minor when
 * `mod.ts` gains something a plugin may use, the major when anything a plugin may use changes.
 */
export const PLUGIN_API_VERSION: PluginApiVersion = "1.0";

/** True when `version` is written `major.minor`, both whole numbers. */
export function isPluginApiVersion(version: unknown): version is PluginApiVersion {
  return typeof version === "string" && /^(0|[1-9]\d*)\.(0|[1-9]\d*)$/.test(version);
}

/**
 * Why a plugin written against `wanted` cannot run on a runtime serving `served`, with the fix;
 * undefined when it can (same major, and a minor no newer than the runtime's).
 */
export function pluginApiMismatch(
  plugin: string,
  wanted: PluginApiVersion,
  served: PluginApiVersion = PLUGIN_API_VERSION,
): string | undefined {
  const [wantedMajor, wantedMinor] = wanted.split(".").map(Number);
  const [servedMajor, servedMinor] = served.split(".").map(Number);
  if (wantedMajor === servedMajor && wantedMinor <= servedMinor) return undefined;
  const fix = wantedMajor > servedMajor || wantedMajor === servedMajor
    ? `run it with a ptemplate-operator that serves plugin API ${wanted} or a later ` +
      `${wantedMajor}.x, or build the plugin against plugin API ${served} (the ` +
      `ptemplate-operator/mod.ts of this release) and declare pluginApi: "${served}"`
    : `build the plugin against plugin API ${served} (the ptemplate-operator/mod.ts of this ` +
      `release) and declare pluginApi: "${served}", or run a release that serves ${wantedMajor}.x`;
  return `plugin ${plugin} was written against plugin API ${wanted}, but this ptemplate-operator ` +
    `serves plugin API ${served}: ${fix}`;
}
