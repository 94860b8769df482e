/** This build's version, from deno.json (what `version` prints and the bundle defaults to). */
import denoJson from "../deno.json" with { type: "json" };

/** `deno.json`'s version. */
export const VERSION: string = denoJson.version;
