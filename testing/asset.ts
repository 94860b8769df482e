/**
 * The harness's own files (the Go toolchain modules, kwok's stages), read where the harness was
 * imported from: a checkout's folder, or a release URL (an own operator's tests import it so),
 * which needs `--allow-net` for that host.
 */

/** The text of the file at `url` (a `file:` URL, or one fetched). */
export async function readAsset(url: URL): Promise<string> {
  if (url.protocol === "file:") return await Deno.readTextFile(url);
  const response = await fetch(url);
  if (!response.ok) {
    await response.body?.cancel();
    throw new Error(`cannot fetch ${url}: ${response.status} ${response.statusText}`);
  }
  return await response.text();
}

/**
 * A local path of the file at `url`: itself for a `file:` URL, else a copy written to `copy`
 * (for a program that takes a path, such as kwok's `--config`).
 */
export async function assetPath(url: URL, copy: string): Promise<string> {
  if (url.protocol === "file:") return url.pathname;
  await Deno.writeTextFile(copy, await readAsset(url));
  return copy;
}
