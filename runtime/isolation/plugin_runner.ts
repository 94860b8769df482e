/**
 * How a controller calls a plugin's code: in this isolate, or in a Worker of the plugin's own
 * (worker_runner.ts). Either way a reconcile or finalize runs within its visit's deadline, and the
 * author's API is the same.
 */
import type { KubeObject, Stored } from "../../kube/object.ts";
import type { StoreChange } from "../cache/mod.ts";
import type {
  MapContext,
  NamespacedName,
  Outcome,
  Plugin,
  ReconcileContext,
} from "../plugin/mod.ts";
import type { Logger, Registry } from "../observe/mod.ts";
import type { VisitDeadline } from "./visit_deadline.ts";

/** A plugin's code, as the controller and the webhooks call it. */
export interface PluginRunner {
  /**
   * `reconcile`, within `deadline`: rejects with ReconcileTimeoutError past it (the plugin's own
   * promise is then no longer waited for), or WorkerInterruptedError when its Worker ended
   * because of another call.
   */
  reconcile(
    object: Stored<KubeObject>,
    context: ReconcileContext,
    deadline: VisitDeadline,
  ): Promise<Outcome | void>;
  /** `finalize`, within `deadline`, as `reconcile`. */
  finalize(
    object: Stored<KubeObject>,
    context: ReconcileContext,
    deadline: VisitDeadline,
  ): Promise<void>;
  /** The plugin's `filter` of changes of its own kind (true when it has none). */
  filter(change: StoreChange<Stored<KubeObject>>): boolean | Promise<boolean>;
  /** Its watch number `index`'s `filter` (true when it has none). */
  watchFilter(index: number, change: StoreChange<Stored<KubeObject>>): boolean | Promise<boolean>;
  /** Its watch number `index`'s `map`. */
  map(
    index: number,
    object: Stored<KubeObject>,
    context: MapContext,
  ): NamespacedName[] | Promise<NamespacedName[]>;
  /** Its `onDeleted`, if it has one. */
  onDeleted(ref: NamespacedName, context: { log: Logger; metrics: Registry }): void;
  /** The plugin as the webhook server calls it: its admission functions run where it runs. */
  readonly admission: Plugin;
  /** Ends what the runner started (a Worker). */
  close(): Promise<void>;
}

/** A plugin run in this isolate: a deadline frees the slot of an await that never returns. */
export function inProcessRunner(plugin: Plugin): PluginRunner {
  return {
    reconcile: (object, context, deadline) =>
      deadline.race(Promise.resolve().then(() => plugin.reconcile(object, context))),
    finalize: (object, context, deadline) =>
      deadline.race(Promise.resolve().then(() => plugin.finalize?.(object, context))),
    filter: (change) => !plugin.filter || plugin.filter(change),
    watchFilter: (index, change) => {
      const filter = plugin.watches?.[index].filter;
      return !filter || filter(change);
    },
    map: (index, object, context) => plugin.watches![index].map(object, context),
    onDeleted: (ref, context) => plugin.onDeleted?.(ref, context),
    admission: plugin,
    close: () => Promise.resolve(),
  };
}

/**
 * Calls `then` with `value`, at once or once it resolves (in-process it is there at once, from a
 * Worker it comes later); `failed` with what it threw or rejected with.
 */
export function whenReady<T>(
  value: () => T | Promise<T>,
  then: (value: T) => void,
  failed: (error: unknown) => void,
): void {
  try {
    const got = value();
    if (got instanceof Promise) got.then(then, failed);
    else then(got);
  } catch (error) {
    failed(error);
  }
}
