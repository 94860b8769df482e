/** This build's version, from deno.json (what `version` prints and the bundle defaults to). */
import { PTEMPLATE_OPERATOR } from "../runtime/mod.ts";

/** `deno.json`'s version: our identity's. */
export const VERSION: string = PTEMPLATE_OPERATOR.version;
