/**
 * The shared event loop, in rooms that depend one way (tests/import_rules_test.ts holds the order):
 * identity (who the operator is, the names it gives itself) and observe (logs, metrics, Events, probes, servers) ← cache (informers) and leader (election) ←
 * plugin (the API) ← reconcile (controllers, the applier) and webhooks; the manager on top runs
 * them all. `certificates/mod.ts` is left out on purpose: the X.509 library costs every start time
 * and memory, so it is imported where needed.
 */
export * from "./identity/mod.ts";
export * from "./observe/mod.ts";
export * from "./cache/mod.ts";
export * from "./leader/mod.ts";
export * from "./plugin/mod.ts";
export * from "./reconcile/mod.ts";
export * from "./webhooks/mod.ts";
export * from "./manager/mod.ts";
export * from "./shutdown_signal.ts";
export * from "./rbac.ts";
export * from "./isolation/mod.ts";
