/**
 * The real control plane for tests, for this project and for plugin authors. A plugin's unit test
 * without a cluster uses `reconcileOnce`, from `mod.ts`; its options are named here.
 */
export * from "./audit_log.ts";
export * from "./binaries.ts";
export * from "./ci.ts";
export * from "./control_plane.ts";
export * from "./eventually.ts";
export * from "./fake_nodes.ts";
export * from "./integration_test_case.ts";
export * from "./kubectl.ts";
export * from "./olm_validate.ts";
export type { ReconcileOnceOptions } from "./reconcile_once.ts";
export * from "./running_manager.ts";
export * from "./service_account_identity.ts";
