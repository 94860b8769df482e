/**
 * Where a new operator imports this runtime from, and whether that can be had: `--runtime` as
 * given (a checkout's folder, or a URL that is fetched once to see that it serves the runtime),
 * else this checkout when `new` runs from one (no network needed), else this version's release.
 */
import { relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { UsageError } from "./flags.ts";
import { VERSION } from "./version.ts";

/** Where this version of the runtime is published: its tag's files, importable as modules. */
export const RELEASE_URL =
  `https://raw.githubusercontent.com/ptemplate/ptemplate-operator/v${VERSION}/`;

/** The files a folder or URL must have to be the runtime a new operator imports. */
const RUNTIME_FILES = ["mod.ts", "cli/operator.ts", "testing/mod.ts"] as const;

/** How a new operator's import map names the runtime, and how `new` says where that came from. */
export interface RuntimeChoice {
  /** A folder relative to the new operator (`../ptemplate-operator/`), an absolute one, or a URL. */
  runtime: string;
  /** One line for the person: where the runtime comes from, and how to choose another. */
  note: string;
}

/**
 * This checkout's folder when running from one (`deno run main.ts`, `deno task new`); undefined in
 * a compiled binary, whose modules are not files anyone can import.
 */
export function checkoutHere(
  moduleUrl = import.meta.url,
  standalone = Deno.build.standalone,
): string | undefined {
  if (standalone || !moduleUrl.startsWith("file:")) return undefined;
  return fileURLToPath(new URL("../", moduleUrl)).replace(/\/$/, "");
}

/**
 * The runtime for an operator written to `target`: `given` (`--runtime`), else this checkout,
 * else the release URL; a URL is fetched (`fetchRuntime`) and refused at once, with the fix, when it
 * does not serve the runtime.
 */
export async function chooseRuntime(options: {
  given?: string;
  target: string;
  checkout?: string;
  fetchRuntime?: (url: string) => Promise<Response>;
}): Promise<RuntimeChoice> {
  const { given, target } = options;
  const checkout = "checkout" in options ? options.checkout : checkoutHere();
  if (given && !isUrl(given)) {
    return { runtime: folderFor(given, target, "--runtime"), note: `runtime: ${given}` };
  }
  if (!given && checkout) {
    const runtime = folderFor(checkout, target, "this checkout");
    return {
      runtime,
      note: `runtime: this checkout, ${runtime} (imported from disk, no network needed); ` +
        `for this version's release instead: --runtime ${RELEASE_URL}`,
    };
  }
  const url = (given ?? RELEASE_URL).replace(/\/?$/, "/");
  await checkUrl(url, options.fetchRuntime ?? fetchWithDeadline, checkout);
  return { runtime: url, note: `runtime: ${url} (checked: it serves mod.ts)` };
}

/** True for `http:` and `https:` references. */
function isUrl(value: string): boolean {
  return /^https?:\/\//.test(value);
}

/** GETs `url` with a 10 s deadline. */
function fetchWithDeadline(url: string): Promise<Response> {
  return fetch(url, { signal: AbortSignal.timeout(10_000) });
}

/** Refuses a URL that does not serve the runtime's mod.ts, saying why and how to do without it. */
async function checkUrl(
  url: string,
  fetchRuntime: (url: string) => Promise<Response>,
  checkout: string | undefined,
): Promise<void> {
  const probe = `${url}mod.ts`;
  const instead = `Use a ptemplate-operator checkout instead: --runtime ${
    checkout ?? "<path to a clone of github.com/ptemplate/ptemplate-operator>"
  } (its files are imported from disk, no network needed)`;
  let problem: string;
  try {
    const response = await fetchRuntime(probe);
    const text = await response.text();
    if (response.ok && /definePlugin/.test(text)) return;
    problem = response.ok
      ? "it answers, but not with the runtime's mod.ts"
      : response.status === 404
      ? `404 Not Found${
        url === RELEASE_URL ? ` (is v${VERSION} released? Its tag must exist on GitHub)` : ""
      }`
      : `HTTP ${response.status} ${response.statusText}`;
  } catch (error) {
    const { name, message, cause } = error as Error & { cause?: Error };
    problem = error instanceof Deno.errors.NotCapable
      ? "this command may not use the network (run it with --allow-net to check a URL)"
      : name === "TimeoutError"
      ? "no answer in 10 s"
      : cause?.message
      ? `${message}: ${cause.message}`
      : message;
  }
  throw new UsageError(`cannot import the runtime from ${url}: ${probe}: ${problem}. ${instead}`);
}

/**
 * A checkout's folder as the new operator's import map names it, checked to be one: relative when
 * near (a sibling checkout, as the guides have it), so the folders can move together; else absolute.
 */
function folderFor(path: string, target: string, what: string): string {
  const folder = resolve(Deno.cwd(), path);
  for (const file of RUNTIME_FILES) {
    try {
      Deno.statSync(`${folder}/${file}`);
    } catch {
      throw new UsageError(
        `${what === "--runtime" ? `--runtime ${path}` : what} has no ${file}: give the folder ` +
          "of a ptemplate-operator checkout, or a URL",
      );
    }
  }
  const near = relative(target, folder) || ".";
  if (near.split("/").filter((part) => part === "..").length > 2) return `${folder}/`;
  return `${near.startsWith(".") ? near : `./${near}`}/`;
}
