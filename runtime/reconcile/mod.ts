/**
 * Running plugins: controllers, work queues, and the applier that makes an Outcome true while
 * writing only what a parent controls (desired state, ownership, foreign fields, finalizers, the
 * write-loop guard).
 */
export * from "./applier.ts";
export * from "./bulk_writes.ts";
export * from "./cause.ts";
export * from "./child_problems.ts";
export * from "./controller.ts";
export * from "./controller_deps.ts";
export * from "./controller_checks.ts";
export * from "./controller_metrics.ts";
export * from "./desired_state.ts";
export * from "./dry_run_report.ts";
export * from "./explain_route.ts";
export * from "./finalizer.ts";
export * from "./key_claims.ts";
export * from "./foreign_fields.ts";
export * from "./ownership.ts";
export * from "./visit_history.ts";
export * from "./visit_trace.ts";
export type { VisitRecorder } from "./visitor.ts";
export * from "./work_queue.ts";
export * from "./write_loop_guard.ts";
