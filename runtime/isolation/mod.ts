/** Where a plugin's code runs and how long it may take: in-process or in a Worker, with a deadline. */
export * from "./plugin_runner.ts";
export * from "./visit_deadline.ts";
export * from "./worker_runner.ts";
export * from "./quarantine.ts";
export * from "./quarantine_condition.ts";
