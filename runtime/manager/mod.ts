/**
 * The manager: one operator process's event loop (caches, controllers while leading, servers),
 * the options it is given, and the parts it runs them with.
 */
export * from "./caller_clients.ts";
export * from "./controller_group.ts";
export * from "./kind_plans.ts";
export * from "./manager.ts";
export * from "./manager_options.ts";
export * from "./manager_servers.ts";
