/**
 * The controller-runtime metric names people already graph (reconciles, workers, work queues). As
 * with controller-runtime's priority queue, a queue's depth, adds and waits carry `priority`
 * (`edit` or `bulk`, see cause.ts): sum over it for the queue as a whole.
 */
import { Counter, exponentialBuckets, Gauge, Histogram, type Registry } from "../observe/mod.ts";
import type { Priority } from "./cause.ts";
import type { QueueObserver, WorkQueue } from "./work_queue.ts";

const RECONCILE_BUCKETS = [
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.15,
  0.2,
  0.25,
  0.3,
  0.35,
  0.4,
  0.45,
  0.5,
  0.6,
  0.7,
  0.8,
  0.9,
  1,
  1.25,
  1.5,
  1.75,
  2,
  2.5,
  3,
  3.5,
  4,
  4.5,
  5,
  6,
  7,
  8,
  9,
  10,
  15,
  20,
  25,
  30,
  40,
  50,
  60,
];
const QUEUE_BUCKETS = exponentialBuckets(1e-8, 10, 10);

/**
 * The controller-runtime and workqueue metrics of every controller of a manager, in one registry,
 * under the names people already graph.
 */
export class ControllerMetrics {
  /** `controller_runtime_reconcile_total{controller, result}`. */
  readonly reconcileTotal: Counter;
  /** `controller_runtime_reconcile_errors_total{controller}`. */
  readonly reconcileErrors: Counter;
  /** Reconciles (and finalizes) abandoned at their deadline, in-process or in a Worker. */
  readonly reconcileTimeouts: Counter;
  /** `controller_runtime_reconcile_time_seconds{controller}`. */
  readonly reconcileTime: Histogram;
  /** `controller_runtime_active_workers{controller}`. */
  readonly activeWorkers: Gauge;
  /** `controller_runtime_max_concurrent_reconciles{controller}`. */
  readonly maxConcurrent: Gauge;
  /** `workqueue_depth{name, priority}`. */
  readonly queueDepth: Gauge;
  /** `workqueue_adds_total{name, priority}`. */
  readonly queueAdds: Counter;
  /** `workqueue_retries_total{name}`. */
  readonly queueRetries: Counter;
  /** `workqueue_queue_duration_seconds{name, priority}`: how long keys wait for a worker. */
  readonly queueDuration: Histogram;
  /** `workqueue_work_duration_seconds{name}`: how long a worker holds a key. */
  readonly workDuration: Histogram;
  /** `controller_write_loops_detected_total{controller, kind}`: loops the guard stopped. */
  readonly writeLoops: Counter;
  /**
   * `controller_runtime_reconcile_panics_total{controller}`: a plugin's own bug thrown out of
   * reconcile.
   */
  readonly reconcilePanics: Counter;
  /** `controller_runtime_terminal_reconcile_errors_total{controller}`: PermanentErrors. */
  readonly terminalErrors: Counter;
  readonly #queues = new Map<string, WorkQueue>();

  /** Registers every metric in `registry`. */
  constructor(readonly registry: Registry) {
    this.reconcileTotal = registry.counter(
      "controller_runtime_reconcile_total",
      "Total number of reconciliations per controller",
      ["controller", "result"],
    );
    this.reconcileErrors = registry.counter(
      "controller_runtime_reconcile_errors_total",
      "Total number of reconciliation errors per controller",
      ["controller"],
    );
    this.reconcileTimeouts = registry.counter(
      "controller_runtime_reconcile_timeouts_total",
      "Total number of reconciliations abandoned at their deadline per controller",
      ["controller"],
    );
    this.reconcileTime = registry.histogram(
      "controller_runtime_reconcile_time_seconds",
      "Length of time per reconciliation per controller",
      ["controller"],
      RECONCILE_BUCKETS,
    );
    this.activeWorkers = registry.gauge(
      "controller_runtime_active_workers",
      "Number of currently used workers per controller",
      ["controller"],
    );
    this.maxConcurrent = registry.gauge(
      "controller_runtime_max_concurrent_reconciles",
      "Maximum number of concurrent reconciles per controller",
      ["controller"],
    );
    this.queueDepth = registry.gauge("workqueue_depth", "Current depth of workqueue", [
      "name",
      "priority",
    ]);
    this.queueAdds = registry.counter(
      "workqueue_adds_total",
      "Total number of adds handled by workqueue",
      ["name", "priority"],
    );
    this.queueRetries = registry.counter(
      "workqueue_retries_total",
      "Total number of retries handled by workqueue",
      ["name"],
    );
    this.queueDuration = registry.histogram(
      "workqueue_queue_duration_seconds",
      "How long in seconds an item stays in workqueue before being requested",
      ["name", "priority"],
      QUEUE_BUCKETS,
    );
    this.workDuration = registry.histogram(
      "workqueue_work_duration_seconds",
      "How long in seconds processing an item from workqueue takes",
      ["name"],
      QUEUE_BUCKETS,
    );
    this.reconcilePanics = registry.counter(
      "controller_runtime_reconcile_panics_total",
      "Total number of reconciliation panics per controller (a plugin's own bug: a TypeError, " +
        "ReferenceError, RangeError or SyntaxError out of reconcile)",
      ["controller"],
    );
    this.terminalErrors = registry.counter(
      "controller_runtime_terminal_reconcile_errors_total",
      "Total number of terminal reconciliation errors per controller (PermanentError: not retried)",
      ["controller"],
    );
    const unfinished = registry.gauge(
      "workqueue_unfinished_work_seconds",
      "How many seconds of work has been done that is in progress and hasn't been observed by " +
        "work_duration. Large values indicate stuck threads.",
      ["name"],
    );
    const longest = registry.gauge(
      "workqueue_longest_running_processor_seconds",
      "How many seconds has the longest running processor for workqueue been running.",
      ["name"],
    );
    registry.onCollect(() => {
      const now = Date.now();
      for (const [name, queue] of this.#queues) {
        const running = queue.inFlightSince().map((since) => (now - since) / 1000);
        unfinished.set({ name }, running.reduce((sum, s) => sum + s, 0));
        longest.set({ name }, running.length ? Math.max(...running) : 0);
      }
    });
    this.writeLoops = registry.counter(
      "controller_write_loops_detected_total",
      "Write loops stopped by the runtime: a child or status rewritten again and again without a spec change",
      ["controller", "kind"],
    );
  }

  /** The queue named `name` now (a controller makes a new one each time it starts leading). */
  trackQueue(name: string, queue: WorkQueue): void {
    this.#queues.set(name, queue);
  }

  /** Hooks a work queue named `name` to the workqueue_* metrics. */
  queueObserver(name: string): QueueObserver {
    const labels = { name };
    const lane = (priority: Priority) => ({ name, priority });
    for (const priority of ["edit", "bulk"] as const) {
      this.queueDepth.set(lane(priority), 0);
      this.queueAdds.inc(lane(priority), 0);
    }
    this.queueRetries.inc(labels, 0);
    return {
      depth: (depth, priority) => this.queueDepth.set(lane(priority), depth),
      added: (priority) => this.queueAdds.inc(lane(priority)),
      retried: () => this.queueRetries.inc(labels),
      waited: (seconds, priority) => this.queueDuration.observe(lane(priority), seconds),
      worked: (seconds) => this.workDuration.observe(labels, seconds),
    };
  }
}
