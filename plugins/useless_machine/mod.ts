/** The useless machine example plugin (seed 002) and its CRDs. */
export * from "./crd.ts";
export * from "./machine.ts";
