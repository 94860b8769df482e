/**
 * The shared event loop: informers, queues, controllers, leader election, metrics, probes, logs.
 * (certificates.ts and self_managed_certificate.ts are imported where needed: the X.509 library
 * costs every start some 60 ms and 14 MiB.)
 */
export * from "./access_review.ts";
export * from "./applier.ts";
export * from "./child_problems.ts";
export * from "./conditions.ts";
export * from "./controller.ts";
export * from "./controller_metrics.ts";
export * from "./desired_state.ts";
export * from "./events.ts";
export * from "./finalizer.ts";
export * from "./http_front.ts";
export * from "./http_server.ts";
export * from "./informer.ts";
export * from "./informer_pool.ts";
export * from "./label_selector.ts";
export * from "./leader_election.ts";
export * from "./logging.ts";
export * from "./manager.ts";
export * from "./metrics.ts";
export * from "./metrics_endpoint.ts";
export * from "./ownership.ts";
export * from "./plugin.ts";
export * from "./probes.ts";
export * from "./rbac.ts";
export * from "./schema_check.ts";
export * from "./self_signed_certificate.ts";
export * from "./serving_certificate.ts";
export * from "./process_metrics.ts";
export * from "./store.ts";
export * from "./warning_throttle.ts";
export * from "./webhook_review.ts";
export * from "./webhook_server.ts";
export * from "./work_queue.ts";
export * from "./write_loop_guard.ts";
