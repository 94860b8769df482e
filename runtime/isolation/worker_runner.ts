/**
 * A plugin run in a Worker of its own (plugin_worker.ts), with a heap cap: a call past its
 * deadline, or a Worker that stops (its heap reached the cap), ends the Worker; the calls it was
 * running fail (the one to blame with a ReconcileTimeoutError, the others with a
 * WorkerInterruptedError) and the next call starts a new Worker. The main isolate, which renews
 * the lease, serves the probes and runs every other plugin, only waits on messages.
 */
import { Worker } from "node:worker_threads";
import type { KubeObject, Stored } from "../../kube/object.ts";
import type { Resource } from "../../kube/resource.ts";
import type { Logger, Registry } from "../observe/mod.ts";
import type {
  AdmissionContext,
  MapContext,
  NamespacedName,
  Outcome,
  Plugin,
  ReconcileContext,
} from "../plugin/mod.ts";
import type { PluginRunner } from "./plugin_runner.ts";
import { answerBuffer, writeAnswer } from "./sync_answer.ts";
import { ReconcileTimeoutError, VisitDeadline, WorkerInterruptedError } from "./visit_deadline.ts";
import {
  type CallName,
  cloneable,
  decodeError,
  encodeError,
  type FromWorker,
  type SyncRequest,
  type ToWorker,
} from "./worker_protocol.ts";

/** Where the Worker finds the plugin, and what it may cost. */
export interface WorkerRunnerOptions {
  /** The URL the main isolate imported the plugin's module from (a `file:` or `data:` URL). */
  url: string;
  /** The export that is the plugin. */
  exportName: string;
  /** The Worker's heap cap in MiB (V8's old generation); past it the Worker is ended. */
  heapLimitMb: number;
  /** The deadline of calls that have none of their own (watch mappings, filters, admission). */
  callTimeoutMs: number;
  /** Where the runner says that it ended or started a Worker. */
  log: Logger;
  /** The registry the plugin's own metrics go to. */
  metrics: Registry;
}

/** What a context call from the Worker is answered from: the context of the call it belongs to. */
interface Call {
  context: Partial<ReconcileContext & AdmissionContext>;
  deadline: VisitDeadline;
  resolve(value: unknown): void;
  reject(error: Error): void;
}

/** One running Worker and the calls it was given. */
interface Running {
  worker: Worker;
  ready: Promise<void>;
  calls: Map<number, Call>;
  /** Where synchronous answers are written (sync_answer.ts). */
  shared: SharedArrayBuffer;
}

/** The plugin's functions, each called in its Worker; see the module doc. */
export function workerRunner(plugin: Plugin, options: WorkerRunnerOptions): PluginRunner {
  let running: Running | undefined;
  let nextId = 0;
  const log = options.log.with({ controller: plugin.name });

  /** Ends the Worker: every call it was running fails, `blame` with `why`. */
  const end = (from: Running, why: ReconcileTimeoutError, blame?: number) => {
    if (running !== from) return;
    running = undefined;
    from.worker.terminate();
    log.warn("ended the Worker of plugin {plugin}: {reason}", {
      plugin: plugin.name,
      reason: why.message,
    });
    for (const [id, call] of from.calls) {
      if (id === blame || blame === undefined) call.deadline.expire(why);
      else call.reject(new WorkerInterruptedError(`its Worker was ended: ${why.message}`));
    }
    from.calls.clear();
  };

  const start = (): Running => {
    const shared = answerBuffer();
    const worker = new Worker(
      new URL("./plugin_worker.ts", import.meta.url),
      {
        workerData: {
          url: options.url,
          exportName: options.exportName,
          name: plugin.name,
          shared,
        },
        resourceLimits: { maxOldGenerationSizeMb: options.heapLimitMb },
      } as ConstructorParameters<typeof Worker>[1],
    );
    const calls = new Map<number, Call>();
    const self: Running = { worker, calls, shared, ready: Promise.resolve() };
    let started!: () => void;
    let failed!: (error: Error) => void;
    self.ready = new Promise<void>((resolve, reject) => {
      started = resolve;
      failed = reject;
    });
    self.ready.catch(() => {});
    worker.on("message", (message: FromWorker) => receive(self, message, started, failed));
    const stopped = (reason: string) => {
      failed(new Error(`plugin ${plugin.name}'s Worker stopped before it was ready: ${reason}`));
      end(
        self,
        new ReconcileTimeoutError(
          `its Worker stopped (${reason}); its heap cap is ${options.heapLimitMb} MiB`,
          "heap",
        ),
      );
    };
    worker.on("error", (error: Error) => stopped(error.message));
    worker.on("exit", (code: number) => stopped(`exit code ${code}`));
    return self;
  };

  const receive = (
    from: Running,
    message: FromWorker,
    started: () => void,
    failed: (error: Error) => void,
  ) => {
    switch (message.type) {
      case "ready":
        return started();
      case "sync":
        writeAnswer(
          from.shared,
          message.request.call,
          answerSync(from.calls.get(message.request.id), message.request),
        );
        return;
      case "load-failed":
        failed(new Error(`plugin ${plugin.name} cannot load in its Worker: ${message.message}`));
        return end(from, new ReconcileTimeoutError(message.message, "heap"));
      case "result": {
        const call = from.calls.get(message.id);
        from.calls.delete(message.id);
        if (message.error) call?.reject(decodeError(message.error));
        else call?.resolve(message.value);
        return;
      }
      case "op": {
        const call = from.calls.get(message.id);
        const answer = (reply: Omit<Extract<ToWorker, { type: "answer" }>, "type" | "op">) =>
          running === from && from.worker.postMessage({ type: "answer", op: message.op, ...reply });
        Promise.resolve()
          .then(() => asyncOp(call, message.method, message.args))
          .then(
            (value) => answer({ value: cloneable(value) }),
            (error) => answer({ error: encodeError(error) }),
          );
        return;
      }
      case "event": {
        const call = from.calls.get(message.id);
        call?.context.events?.record(message.object as KubeObject, message.event as never);
        return;
      }
      case "log": {
        const logger = from.calls.get(message.id)?.context.log ?? log;
        const properties = message.properties as Record<string, unknown>;
        const level = message.level as "debug" | "info" | "warning" | "error" | "fatal" | "trace";
        logger[level]?.(message.message, properties);
        return;
      }
      case "metric": {
        const { kind, name, help, labelNames, buckets, method, args } = message;
        try {
          const family = kind === "histogram"
            ? options.metrics.histogram(name, help, labelNames, buckets ?? [])
            : options.metrics[kind](name, help, labelNames);
          const fn = (family as unknown as Record<string, unknown>)[method];
          if (typeof fn === "function") fn.apply(family, args);
        } catch (error) {
          log.warn("plugin {plugin}'s metric {name}: {error}", {
            plugin: plugin.name,
            name,
            error,
          });
        }
        return;
      }
    }
  };

  /** Runs `call` in the Worker (started if none runs) within `deadline`. */
  const call = async (
    name: CallName,
    args: unknown[],
    context: Call["context"],
    deadline: VisitDeadline,
    index?: number,
  ): Promise<unknown> => {
    const current = running ??= start();
    await current.ready;
    if (running !== current) throw new WorkerInterruptedError("its Worker was ended meanwhile");
    const id = nextId++;
    const result = new Promise<unknown>((resolve, reject) => {
      current.calls.set(id, { context, deadline, resolve, reject });
    });
    const abort = () => {
      // Its Worker may have been ended by now: then there is nothing left to tell.
      if (running === current) current.worker.postMessage({ type: "abort", id } satisfies ToWorker);
    };
    deadline.signal.addEventListener("abort", abort, { once: true });
    current.worker.postMessage(
      {
        type: "call",
        id,
        call: name,
        index,
        args: cloneable(args) as unknown[],
      } satisfies ToWorker,
    );
    try {
      return await deadline.race(result);
    } catch (error) {
      if (error instanceof ReconcileTimeoutError && error.by === "deadline") {
        end(current, error, id);
      }
      throw error;
    } finally {
      deadline.signal.removeEventListener("abort", abort);
      current.calls.delete(id);
    }
  };

  /** A call that has no visit of its own: its deadline is the runner's. */
  const quick = async (
    name: CallName,
    args: unknown[],
    context: Call["context"],
    index?: number,
  ): Promise<unknown> => {
    const deadline = new VisitDeadline(options.callTimeoutMs, new AbortController().signal);
    try {
      return await call(name, args, context, deadline, index);
    } finally {
      deadline.end();
    }
  };

  const admission: Plugin = {
    ...plugin,
    default: plugin.default &&
      ((object: KubeObject, context: AdmissionContext) =>
        quick("default", [object], context) as Promise<KubeObject | void>),
    validate: plugin.validate &&
      ((request, context) => quick("validate", [request], context) as Promise<void>),
  };

  return {
    reconcile: (object, context, deadline) =>
      call("reconcile", [object], context, deadline) as Promise<Outcome | void>,
    finalize: (object, context, deadline) =>
      call("finalize", [object], context, deadline) as Promise<void>,
    filter: (change) => !plugin.filter || quick("filter", [change], {}) as Promise<boolean>,
    watchFilter: (index, change) =>
      !plugin.watches?.[index].filter ||
      quick("watchFilter", [change], {}, index) as Promise<boolean>,
    map: (index, object: Stored<KubeObject>, context: MapContext) =>
      quick("map", [object], context, index) as Promise<NamespacedName[]>,
    onDeleted: (ref, context: { log: Logger; metrics: Registry }) => {
      if (!plugin.onDeleted) return;
      quick("onDeleted", [ref], context).catch((error) =>
        context.log.error("onDeleted failed: {error}", { error })
      );
    },
    admission,
    close: async () => {
      const current = running;
      running = undefined;
      await current?.worker.terminate();
    },
  };
}

/** The answer to a synchronous context call, from the context of the call it belongs to. */
function answerSync(
  call: Call | undefined,
  request: SyncRequest,
): { value?: unknown; error?: ReturnType<typeof encodeError> } {
  try {
    const context = call?.context;
    if (!context) throw new Error(`${request.method} outside a call`);
    const resource = request.resource as Resource;
    const [what, method] = request.method.split(".");
    let value: unknown;
    if (what === "cache") {
      const cache = context.cache!(resource) as unknown as Record<
        string,
        (...args: unknown[]) => unknown
      >;
      value = cache[method](...request.args);
    } else if (what === "installed") value = context.installed!(resource);
    else if (what === "problems") value = context.problems!();
    else throw new Error(`unknown call ${request.method}`);
    return { value };
  } catch (error) {
    return { error: encodeError(error) };
  }
}

/** An awaited context call: a client request, or admission's `requesterMay`. */
function asyncOp(call: Call | undefined, method: string, args: unknown[]): unknown {
  if (!call) throw new Error(`${method} after its call ended`);
  const [what, name] = method.split(".");
  if (what === "requesterMay") {
    return (call.context.requesterMay as (...a: unknown[]) => unknown)(...args);
  }
  if (what !== "client" || !call.context.client) throw new Error(`unknown call ${method}`);
  const client = call.context.client as unknown as Record<string, (...args: unknown[]) => unknown>;
  if (typeof client[name] !== "function") throw new TypeError(`client.${name} is not a function`);
  return client[name](...args);
}
