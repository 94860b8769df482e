/**
 * The files a `--plugin` module is made of: the module and every local module it imports, found
 * by lexing their imports (es-module-lexer, which reads TypeScript's too), read once, and their
 * one digest, which `--plugin ./x.ts#sha256=<hex>` pins.
 */
import { init as lexerReady, parse as lexImports } from "es-module-lexer";
import { relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** One local module of a plugin, as read. */
export interface PluginFile {
  /** Its absolute path. */
  path: string;
  /** Its path relative to the folder of the plugin's main module (what the digest names). */
  name: string;
  bytes: Uint8Array;
}

/** A plugin's local modules, and what its imports reach beyond them. */
export interface PluginFiles {
  /** The main module first, then every local module it imports, directly or not, by name. */
  files: PluginFile[];
  /** Imports that no digest of ours can cover: `https:` modules, and computed `import(…)`s. */
  uncovered: string[];
}

/** Extensions whose imports are followed (others, such as `.json`, are read and hashed only). */
const SCRIPT = /\.(ts|mts|js|mjs|tsx|jsx)$/;

/**
 * Reads the module at `path` and every module it imports by a relative or `file:` specifier,
 * transitively, but those `skip` says are not the plugin's. Bare and `npm:`/`jsr:`/`node:`
 * specifiers are the binary's own (its import map) and not followed. Throws when a local import
 * does not exist.
 */
export async function pluginFiles(
  path: string,
  options: { skip?: (path: string) => boolean } = {},
): Promise<PluginFiles> {
  await lexerReady;
  const root = path.slice(0, path.lastIndexOf("/") + 1) || ".";
  const files: PluginFile[] = [];
  const uncovered: string[] = [];
  const seen = new Set<string>([path]);
  const pending = [path];
  while (pending.length) {
    const current = pending.shift()!;
    const bytes = await Deno.readFile(current);
    files.push({ path: current, name: relative(root, current), bytes });
    if (!SCRIPT.test(current)) continue;
    const [imports] = lexImports(new TextDecoder().decode(bytes), current);
    for (const found of imports) {
      const specifier = found.specifier;
      if (specifier === undefined || specifier === null) {
        uncovered.push(`${relative(root, current)}: import() of a computed specifier`);
        continue;
      }
      // Types are erased before anything runs: nothing of them loads.
      if ("typeOnly" in found && found.typeOnly) continue;
      if (/^https?:/.test(specifier)) {
        uncovered.push(`${relative(root, current)}: ${specifier}`);
        continue;
      }
      if (!/^(\.{1,2}\/|\/|file:)/.test(specifier)) continue;
      const target = fileURLToPath(new URL(specifier, pathToFileURL(current)));
      if (seen.has(target) || options.skip?.(target)) continue;
      seen.add(target);
      try {
        const info = await Deno.stat(target);
        if (!info.isFile) throw new Error("not a file");
      } catch {
        throw new Error(`${relative(root, current)} imports ${specifier}, which is not a file`);
      }
      pending.push(target);
    }
  }
  const [main, ...rest] = files;
  return { files: [main, ...rest.sort((a, b) => a.name < b.name ? -1 : 1)], uncovered };
}

/** The SHA-256 of `bytes`, in hex. */
export async function sha256(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * The digest a pin names. For a module that imports no local module (a bundle, say) it is the
 * file's own SHA-256, what `sha256sum x.js` prints. For several, it is the SHA-256 of the lines
 * `sha256sum` would print for them (`<hex>  <name>`, names relative to the main module's folder,
 * main module first, the others sorted by name), so that a change to any of them changes it.
 */
export async function pluginDigest(files: PluginFile[]): Promise<string> {
  if (files.length === 1) return await sha256(files[0].bytes);
  const lines = await Promise.all(files.map(async (f) => `${await sha256(f.bytes)}  ${f.name}\n`));
  return await sha256(new TextEncoder().encode(lines.join("")));
}
