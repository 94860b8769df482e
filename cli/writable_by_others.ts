/**
 * Whether someone other than a file's owner could change what the operator would load from it: the
 * file, or any folder above it (they could replace it), writable by its group or by others. The
 * path is checked as given and as the links in it resolve (a ConfigMap volume's files are links).
 */
import { dirname, resolve } from "node:path";

/** What may be changed by others, naming the path and the fix; undefined when nothing. */
export async function writableByOthers(path: string): Promise<string | undefined> {
  const given = resolve(path);
  const real = await Deno.realPath(given);
  const file = await Deno.stat(real);
  // Windows has no mode bits: nothing to check there.
  if (file.mode === null) return undefined;
  if (file.mode & 0o022) return problem(real, file.mode, "file");
  // Each folder a link on the way could lead through, with the entry beneath it that we follow.
  const folders = new Map<string, string>();
  for (const start of new Set([given, real])) {
    for (let below = start, dir = dirname(start); below !== dir; below = dir, dir = dirname(dir)) {
      folders.set(`${dir}\0${below}`, dir);
    }
  }
  for (const [key, dir] of folders) {
    const info = await Deno.stat(dir);
    const mode = info.mode ?? 0;
    if (!(mode & 0o022)) continue;
    // A sticky folder (/tmp) lets others add entries but not rename or replace another's: it is
    // safe to pass through when the entry we follow belongs to root or to the plugin's owner.
    const below = key.slice(dir.length + 1);
    const entry = await Deno.lstat(below);
    if (mode & 0o1000 && (entry.uid === 0 || entry.uid === file.uid)) continue;
    return problem(dir, mode, "folder");
  }
  return undefined;
}

function problem(path: string, mode: number, what: "file" | "folder"): string {
  const who = [mode & 0o020 ? "its group" : "", mode & 0o002 ? "everyone" : ""].filter(Boolean);
  const octal = (mode & 0o7777).toString(8).padStart(4, "0");
  return `the ${what} ${path} may be changed by ${who.join(" and ")} (mode ${octal}), so ` +
    `someone other than its owner could change what runs: chmod go-w ${path}` +
    (what === "folder"
      ? " (a ConfigMap volume's folder is 0777 by the kubelet's choice: mount the plugin file " +
        "with subPath instead, as deploy/plugin/configmap does)"
      : "");
}
