/**
 * Running an operator binary of your own: who it is (`defineOperator`), its command line
 * (`runOperator` over a catalog of plugins), its CRD files, and the manager underneath for those
 * who start it themselves. `deno task new` writes an operator that uses this entry; its plugins
 * use `mod.ts`.
 */

// Who the operator is: the names it gives itself in a cluster.
export {
  defineOperator,
  type EstablishedNames,
  type FormerIdentity,
  type OperatorIdentity,
  type OperatorIdentityInit,
  PTEMPLATE_OPERATOR,
} from "./runtime/identity/mod.ts";

// Its command line, over the plugins it carries, and the files generated from their CRDs.
export { type CatalogEntry, type OperatorOptions, runOperator } from "./cli/operator.ts";
export {
  type CrdFile,
  crdFiles,
  staleFiles,
  typeFiles,
  typesBesidePlugin,
  writeFiles,
} from "./cli/crd_files.ts";
export { rbacFile } from "./cli/rbac_file.ts";
export { type Conversion } from "./runtime/webhooks/mod.ts";

// Its deploy and OLM bundle, built and checked as its own.
export { type BundleFile, type BundleOptions, olmBundle } from "./cli/olm_bundle.ts";
export { bundleChecks, type CheckResult } from "./cli/olm_checks.ts";
export { readExamples } from "./cli/olm_listing.ts";
export { PLUGIN_API_VERSION, type PluginApiVersion } from "./runtime/plugin/mod.ts";

// Starting the manager yourself.
export { Manager, type ManagerEndpoints, type ManagerOptions } from "./runtime/manager/mod.ts";
export { type DryRunObject, DryRunReport, type WouldChange } from "./runtime/reconcile/mod.ts";
export { shutdownSignal } from "./runtime/shutdown_signal.ts";
export { type LogFormat, type LogLevel, setupLogging } from "./runtime/observe/mod.ts";
export { type ClientOptions, KubeClient } from "./kube/client.ts";
export { loadClusterConfig, type LoadOptions } from "./kube/load_config.ts";
export type { ClusterConfig, ExecConfig } from "./kube/cluster_config.ts";
