/** Every subcommand of the command line (cli/operator.ts lists them in order; `run` is the default). */
export * from "./bundle.ts";
export * from "./check.ts";
export * from "./crds.ts";
export * from "./explain.ts";
export * from "./install.ts";
export * from "./new.ts";
export * from "./rbac.ts";
export * from "./run.ts";
export * from "./scorecard.ts";
export * from "./uninstall.ts";
export * from "./version.ts";
