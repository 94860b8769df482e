/** This build's version, from deno.json (what `version` prints and the bundle defaults to). */
import { PTEMPLATE_OPERATOR } from "../runtime/mod.ts";

/** `deno.json`'s version: our identity's. */
export const VERSION: string = PTEMPLATE_OPERATOR.version;

/**
 * The Deno this version is built and tested with (CI's, the release's `DENO_VERSION`, the image's
 * base): what a new operator pins too.
 */
export const DENO_VERSION = "2.9.6";
