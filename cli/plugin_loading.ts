/**
 * Loads `--plugin` modules, and only what the command line names: a file path, optionally pinned
 * (`./x.ts#sha256=<hex>`). Before anything of it runs, every local module it is made of is found;
 * none of them (nor a folder above them) may be writable by others; a pin must match their
 * digest. A pinned single-file module (a bundle) is imported from the very bytes that were
 * hashed, so what was checked is what runs. After the import, each plugin must come from this
 * binary's own `definePlugin` (not a copy bundled into the module) and speak a plugin API
 * version it serves. Under `deno run` the module must type-check first.
 */
import { dirname, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Unstructured } from "../kube/mod.ts";
import {
  isDefinedHere,
  looksLikePlugin,
  PLUGIN_API_VERSION,
  pluginApiMismatch,
} from "../runtime/mod.ts";
import { UsageError } from "./flags.ts";
import { pluginDigest, type PluginFile, pluginFiles } from "./plugin_files.ts";
import type { CatalogEntry } from "./plugin_catalog.ts";
import { typeCheck, typeCheckRefusal } from "./plugin_type_check.ts";
import { writableByOthers } from "./writable_by_others.ts";

/** Where a loaded plugin came from: enough for a Worker to load the same plugin. */
export interface PluginSource {
  /** The `--plugin` value, as given. */
  named: string;
  /** The URL the module was imported from (a `file:` URL, or a `data:` URL of pinned bytes). */
  url: string;
  /** The name the module exports the plugin under. */
  exportName: string;
  /** The folders of its local modules (what its plugin host may read under `deno run`). */
  folders: string[];
}

/** Our own source tree under `deno run` (modules there are the binary's own, not the plugin's). */
const OWN_ROOT = fileURLToPath(new URL("../", import.meta.url));

/** A `--plugin` value: its path and, if pinned, the digest it must have. */
export function parsePluginArgument(value: string): { path: string; pin?: string } {
  const pinned = value.match(/^(.*)#sha256=([0-9a-fA-F]*)$/s);
  const named = pinned ? pinned[1] : value;
  if (pinned && !/^[0-9a-f]{64}$/i.test(pinned[2])) {
    throw new UsageError(
      `--plugin ${value}: a pin is #sha256= and 64 hexadecimal digits (sha256sum prints them)`,
    );
  }
  if (/^[a-z][a-z0-9+.-]+:/i.test(named) && !named.startsWith("file:")) {
    throw new UsageError(
      `--plugin ${value}: give a file path; the operator loads plugins from files only, ` +
        "which it checks first (copy a remote module to a file, or bundle it with deno bundle)",
    );
  }
  const path = named.startsWith("file:") ? fileURLToPath(named) : resolve(named);
  return { path, pin: pinned?.[2].toLowerCase() };
}

/** Loads `--plugin` modules: every plugin a module exports is added, enabled. */
export async function loadPluginModules(values: string[]): Promise<CatalogEntry[]> {
  const entries: CatalogEntry[] = [];
  for (const value of values) {
    const { path, pin } = parsePluginArgument(value);
    const files = await checkedFiles(value, path, pin);
    await refuseIllTyped(value, path);
    const url = pin && files.length === 1 ? dataUrl(files[0]) : pathToFileURL(path).href;
    const module: Record<string, unknown> = await import(url).catch((error) => {
      throw new UsageError(`--plugin ${value}: cannot load it: ${error.message}`);
    });
    if (pin && files.length > 1) {
      // Imported from disk: what was read then is what was hashed before, or we say so.
      const again = await pluginDigest(await Promise.all(files.map(reread)));
      if (again !== pin) {
        throw new Error(
          `--plugin ${value}: its files changed while they were loaded (digest now ` +
            `sha256=${again}); find out who changes them, then start again`,
        );
      }
    }
    const crds = Object.values(module).filter((v): v is Unstructured =>
      (v as Unstructured | null)?.kind === "CustomResourceDefinition"
    );
    const found = Object.entries(module).filter(([, v]) => looksLikePlugin(v));
    if (!found.length) {
      throw new UsageError(`--plugin ${value} exports no plugin (made with definePlugin)`);
    }
    for (const [exportName, plugin] of found) {
      if (!looksLikePlugin(plugin)) continue;
      if (!isDefinedHere(plugin)) {
        throw new Error(
          `--plugin ${value}: plugin ${plugin.name} was made by a copy of ptemplate-operator ` +
            `bundled into the module${
              plugin.pluginApi ? ` (plugin API ${plugin.pluginApi})` : ""
            }, not by this binary's (plugin API ${PLUGIN_API_VERSION}): bundle it with ` +
            `deno bundle --external 'ptemplate-operator/*' so that it imports ours`,
        );
      }
      const mismatch = pluginApiMismatch(plugin.name, plugin.pluginApi ?? PLUGIN_API_VERSION);
      if (mismatch) throw new Error(`--plugin ${value}: ${mismatch}`);
      entries.push({
        plugin,
        crds,
        enabledByDefault: true,
        source: {
          named: value,
          url,
          exportName,
          folders: [...new Set(files.map((f) => dirname(f.path)))],
        },
      });
    }
  }
  return entries;
}

/**
 * Under `deno run`, refuses a module that does not type-check, naming the file and line (see
 * plugin_type_check.ts); one that cannot be checked (no `deno` to run) runs, with a warning. A
 * compiled binary has no type checker: building the plugin checks it.
 */
async function refuseIllTyped(value: string, path: string): Promise<void> {
  if (Deno.build.standalone) return;
  const checked = await typeCheck(path);
  if (checked.result === "failed") throw new Error(typeCheckRefusal(value, path, checked.errors));
  if (checked.result === "unchecked") {
    console.error(`warning: --plugin ${value} runs without a type check: ${checked.reason}`);
  }
}

/**
 * The files of the module at `path` (the binary's own modules left out), each checked to be
 * changeable by its owner only, and together matching `pin` when one is given.
 */
async function checkedFiles(value: string, path: string, pin?: string): Promise<PluginFile[]> {
  const info = await Deno.stat(path).catch(() => undefined);
  if (!info?.isFile) {
    throw new UsageError(`--plugin ${value}: ${path} is not a file`);
  }
  let found;
  try {
    found = await pluginFiles(path, { skip: (file) => !relative(OWN_ROOT, file).startsWith("..") });
  } catch (error) {
    throw new Error(`--plugin ${value}: ${(error as Error).message}`);
  }
  for (const file of found.files) {
    const problem = await writableByOthers(file.path);
    if (problem) throw new Error(`--plugin ${value}: refused: ${problem}`);
  }
  if (!pin) return found.files;
  if (found.uncovered.length) {
    throw new Error(
      `--plugin ${value}: a pin covers local files only, and the module imports ` +
        `${
          found.uncovered.join(", ")
        }: bundle it (deno bundle --external 'ptemplate-operator/*') ` +
        "and pin the bundle",
    );
  }
  const digest = await pluginDigest(found.files);
  if (digest !== pin) {
    const what = found.files.length === 1
      ? "the file"
      : `its ${found.files.length} files (${found.files.map((f) => f.name).join(", ")})`;
    throw new Error(
      `--plugin ${value}: refused: pinned sha256=${pin}, but ${what} now ${
        found.files.length === 1 ? "has" : "have"
      } sha256=${digest}; if the change is yours, pin the new digest`,
    );
  }
  return found.files;
}

async function reread(file: PluginFile): Promise<PluginFile> {
  return { ...file, bytes: await Deno.readFile(file.path) };
}

/** The module's bytes as a URL of their own: nothing on disk is read again to run them. */
function dataUrl(file: PluginFile): string {
  const type = /\.m?tsx?$/.test(file.path) ? "application/typescript" : "application/javascript";
  let binary = "";
  for (let i = 0; i < file.bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...file.bytes.subarray(i, i + 0x8000));
  }
  return `data:${type};base64,${btoa(binary)}`;
}
