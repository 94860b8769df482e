/** What a Controller runs on, shared by every controller of a manager, and its default deadline. */
import type { KubeClient } from "../../kube/client.ts";
import type { KubeObject } from "../../kube/object.ts";
import type { PoolReader } from "../cache/mod.ts";
import type { OperatorIdentity } from "../identity/mod.ts";
import type { PluginRunner } from "../isolation/mod.ts";
import type { EventRecorder, Logger } from "../observe/mod.ts";
import type { BulkWrites } from "./bulk_writes.ts";
import type { ChildProblems } from "./child_problems.ts";
import type { ControllerMetrics } from "./controller_metrics.ts";
import type { DryRunReport } from "./dry_run_report.ts";
import type { KeyClaims } from "./key_claims.ts";
import type { WriteLoopGuard } from "./write_loop_guard.ts";

/**
 * What a Controller runs on: the operator's client, caches, metrics, Events, logs and write-loop
 * guard, shared by every controller of a manager.
 */
export interface ControllerDeps {
  /** Whose runtime this is: its field managers, labels, annotations and default finalizers. */
  operator: OperatorIdentity;
  /** The client a visit's writes go through, fenced per visit. */
  client: KubeClient;
  /** The caches it reads and is told of changes by. */
  pool: PoolReader;
  /** The controller-runtime metrics it counts into. */
  metrics: ControllerMetrics;
  /** Where the plugin's Events and the runtime's Warnings about it go. */
  events: EventRecorder;
  /** Where it logs, with `controller` set to the plugin's name. */
  log: Logger;
  /** Shared by the plugins of one process, so each can report what the others could not write. */
  problems: ChildProblems;
  /** Stops a child (or status) that is rewritten again and again without a spec change. */
  guard: WriteLoopGuard;
  /**
   * Shared by the plugins of one process: what their bulk visits wrote, so that what it changes
   * stays bulk work for every plugin. Without it, every change is heard in its own lane.
   */
  bulkWrites?: BulkWrites;
  /** Workers when the plugin does not say; default 1. */
  concurrency?: number;
  /** Where the plugin's code runs; default in this isolate. */
  runner?: PluginRunner;
  /** The deadline of a reconcile or finalize when the plugin does not say; default 60 s. */
  reconcileTimeoutMs?: number;
  /**
   * When replicas split the keys (a ring of shards): who may reconcile an object now. Without
   * it, this replica reconciles every key (while it leads).
   */
  claims?: KeyClaims;
  /** Labels of the runtime's own on every child of a parent; see ApplierDeps.childLabels. */
  childLabels?: (parent: KubeObject) => Record<string, string>;
  /**
   * The plugin's reads of a field it did not declare (`reads`) throw an UndeclaredReadError
   * instead of reading what the cache kept: for tests. Costs a proxy per object read.
   */
  strictReads?: boolean;
  /** How many recent visits `history` keeps, for `explain`; default 1000. */
  visitHistory?: number;
  /** Edits before bulk work in the queue (default true); see WorkQueueOptions.priority. */
  priorityQueue?: boolean;
  /** A dry run: what would change is told here, and nothing is stored (see ApplierDeps.dryRun). */
  dryRun?: DryRunReport;
}

/** The deadline of a reconcile or finalize when neither the plugin nor the manager says. */
export const DEFAULT_RECONCILE_TIMEOUT_MS = 60_000;
