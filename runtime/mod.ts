/** The shared event loop: informers, queues, controllers, leader election, metrics, probes, logs. */
export * from "./backoff.ts";
export * from "./conditions.ts";
export * from "./controller.ts";
export * from "./controller_metrics.ts";
export * from "./desired_state.ts";
export * from "./events.ts";
export * from "./informer.ts";
export * from "./informer_pool.ts";
export * from "./label_selector.ts";
export * from "./leader_election.ts";
export * from "./logging.ts";
export * from "./manager.ts";
export * from "./metrics.ts";
export * from "./plugin.ts";
export * from "./probes.ts";
export * from "./store.ts";
export * from "./work_queue.ts";
