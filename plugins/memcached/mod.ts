/** The memcached example plugin (seed 001) and its CRD. */
export * from "./crd.ts";
export * from "./memcached.ts";
