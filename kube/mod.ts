/** The Kubernetes client: configuration, requests, watch and errors. */
export * from "./client.ts";
export * from "./cluster_config.ts";
export * from "./connection_health.ts";
export * from "./custom_resource_definition.ts";
export * from "./empty_value_policy.ts";
export * from "./errors.ts";
export * from "./kinds.ts";
export * from "./kubeconfig.ts";
export * from "./kubeconfig_yaml.ts";
export * from "./load_config.ts";
export * from "./network_error.ts";
export * from "./preflight.ts";
export * from "./rate_limiter.ts";
export * from "./resource.ts";
export * from "./secret_redaction.ts";
export * from "./transport.ts";
export * from "./watch.ts";
