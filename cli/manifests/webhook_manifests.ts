/**
 * The webhook configurations the enabled plugins need, from their declarations: a
 * ValidatingWebhookConfiguration for each plugin with `validate`, a Mutating one for `default`.
 * `failurePolicy: Ignore` with a 5 s timeout: a down operator costs warnings and defaults, never
 * the cluster's writes (the schema and CEL still refuse what is invalid without us).
 */
import type { Plugin, Unstructured } from "../../mod.ts";
import { type OperatorIdentity, PTEMPLATE_OPERATOR, webhookPaths } from "../../runtime/mod.ts";

/**
 * The names the operator's webhooks are deployed under, shared by the manifests, their RBAC and
 * the self-managed certificates (whose Secret name does not follow `--webhook-service`, so the
 * generated RBAC always names it). Ours: `ptemplate-operator`, `ptemplate-operator-webhook`, ….
 */
export function webhookNames(operator: OperatorIdentity): {
  configuration: string;
  service: string;
  secret: string;
  certificate: string;
} {
  const name = operator.name;
  return {
    configuration: name,
    service: `${name}-webhook`,
    secret: `${name}-webhook-cert`,
    /** cert-manager's Certificate (deploy/webhooks/cert-manager/certificate.yaml). */
    certificate: `${name}-webhook`,
  };
}

/** Where the API server reaches a path of ours: a Service, or a URL (loopback, tests). */
export type ClientConfigFor = (path: string) => Record<string, unknown>;

/** The operator's webhook configurations (named after it) for the plugins' admission. */
export function webhookConfigurations(
  plugins: Plugin[],
  clientConfig: ClientConfigFor,
  operator: OperatorIdentity = PTEMPLATE_OPERATOR,
): Unstructured[] {
  const { configuration } = webhookNames(operator);
  const hook = (plugin: Plugin, path: string, suffix: string) => ({
    name: `${plugin.name}.${suffix}.${plugin.for.group || "core"}`,
    clientConfig: clientConfig(path),
    rules: [{
      apiGroups: [plugin.for.group],
      apiVersions: ["*"],
      operations: ["CREATE", "UPDATE"],
      resources: [plugin.for.plural],
      scope: plugin.for.namespaced ? "Namespaced" : "Cluster",
    }],
    matchPolicy: "Equivalent",
    failurePolicy: "Ignore",
    timeoutSeconds: 5,
    sideEffects: "None",
    admissionReviewVersions: ["v1"],
  });
  const validating = plugins.filter((p) => p.validate).map((p) =>
    hook(p, webhookPaths(p).validate, "validate")
  );
  const mutating = plugins.filter((p) => p.default).map((p) => ({
    ...hook(p, webhookPaths(p).mutate, "default"),
    reinvocationPolicy: "Never",
  }));
  const api = "admissionregistration.k8s.io/v1";
  return [
    ...(validating.length
      ? [{
        apiVersion: api,
        kind: "ValidatingWebhookConfiguration",
        metadata: { name: configuration },
        webhooks: validating,
      }]
      : []),
    ...(mutating.length
      ? [{
        apiVersion: api,
        kind: "MutatingWebhookConfiguration",
        metadata: { name: configuration },
        webhooks: mutating,
      }]
      : []),
  ];
}
