/** The public API for plugin authors: everything a plugin imports comes from here. */
export * from "./kube/mod.ts";
export * from "./runtime/mod.ts";
