/**
 * What the operator tells people and machines: logs, metrics, Kubernetes Events, the probes, and
 * the HTTP servers they are served on (the TCP front that bounds callers, routes, reviews of
 * `/metrics` callers, the serving certificates of the light kind).
 */
export * from "./access_review.ts";
export * from "./client_metrics.ts";
export * from "./connection_checks.ts";
export * from "./event_correlator.ts";
export * from "./events.ts";
export * from "./http_error.ts";
export * from "./http_front.ts";
export * from "./http_server.ts";
export * from "./logging.ts";
export * from "./metrics.ts";
export * from "./metrics_endpoint.ts";
export * from "./probes.ts";
export * from "./process_metrics.ts";
export * from "./self_signed_certificate.ts";
export * from "./serving_certificate.ts";
export * from "./warning_throttle.ts";
