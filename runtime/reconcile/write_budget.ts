/**
 * One plugin's writes as the write-loop guard sees them: before a write, may it go out (or in
 * how many milliseconds); after one that succeeded and changed something, count it. A loop is
 * reported once, when it is found (a metric and a Warning Event on the parent). Failed attempts,
 * conflicts and writes the server found nothing to change in are no loop, however many.
 */
import type { KubeObject } from "../../kube/object.ts";
import { type ObjectRef, objectRef } from "../../kube/object_ref.ts";
import type { Resource } from "../../kube/resource.ts";
import type { EventRecorder } from "../observe/mod.ts";
import type { ControllerMetrics } from "./controller_metrics.ts";
import type { WriteLoopGuard, WriteTarget } from "./write_loop_guard.ts";

/** What the budget needs. */
export interface WriteBudgetDeps {
  /** The plugin's name: the writer the guard counts, and the metrics label. */
  name: string;
  /** The kind the plugin reconciles. */
  for: Resource;
  guard: WriteLoopGuard;
  metrics: ControllerMetrics;
  events: EventRecorder;
}

export class WriteBudget {
  readonly #deps: WriteBudgetDeps;

  constructor(deps: WriteBudgetDeps) {
    this.#deps = deps;
  }

  /**
   * True when a write of `child` (or the status, without one) of `parent` may go out now, else
   * the milliseconds until it may be tried again. `describe` says what keeps changing.
   */
  check(
    parent: KubeObject,
    child: ObjectRef | undefined,
    label: string,
    describe: () => string,
  ): true | number {
    const verdict = this.#deps.guard.check(
      this.#target(parent, child),
      parent.metadata?.generation,
    );
    if (verdict.allowed) return true;
    if (verdict.detected) {
      const kind = child?.kind ?? "status";
      this.#deps.metrics.writeLoops.inc({ controller: this.#deps.name, kind });
      this.#deps.events.record(parent, {
        type: "Warning",
        reason: "WriteLoopDetected",
        message: `${label} was written ${verdict.writes} times in a row without a change to ` +
          `the spec (${describe()}); not writing it for ${
            Math.round(verdict.retryInMs / 1000)
          } s. A plugin must return the same result for the same input, and no one else may ` +
          `keep changing what it writes`,
      });
    }
    return verdict.retryInMs;
  }

  /** Counts a write of `child` (or the status) of `parent` that succeeded and changed it. */
  wrote(parent: KubeObject, child?: ObjectRef): void {
    this.#deps.guard.record(this.#target(parent, child), parent.metadata?.generation);
  }

  #target(parent: KubeObject, child: ObjectRef | undefined): WriteTarget {
    return { writer: this.#deps.name, parent: objectRef(this.#deps.for, parent), child };
  }
}
