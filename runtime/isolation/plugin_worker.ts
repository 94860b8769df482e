/**
 * The inside of a plugin's Worker: imports the plugin's module and runs its functions for the main
 * isolate, with a context that looks like the in-process one. Cache reads, `installed` and
 * `problems` are synchronous: the request is a message, and this thread waits (`Atomics.wait`)
 * until the answer is written into a SharedArrayBuffer (sync_answer.ts); client calls and admission's `requesterMay` are awaited messages; logs,
 * Events and metrics are messages nobody waits for.
 */
import { parentPort, workerData } from "node:worker_threads";
import type { KubeObject } from "../../kube/object.ts";
import type { Resource } from "../../kube/resource.ts";
import type { Logger, Registry } from "../observe/mod.ts";
import { looksLikePlugin, type Plugin } from "../plugin/mod.ts";
import { awaitAnswer, expectAnswer } from "./sync_answer.ts";
import {
  type CallName,
  cloneable,
  decodeError,
  encodeError,
  type FromWorker,
  type ToWorker,
  type WorkerStart,
} from "./worker_protocol.ts";

const start = workerData as WorkerStart;
const port = parentPort!;
/** Synchronous calls made so far: each answer names the call it answers. */
let syncCalls = 0;
const post = (message: FromWorker) => port.postMessage(message);

/** The calls under way, by id: their signal, and the answers of their awaited context calls. */
const calls = new Map<number, AbortController>();
const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
let nextOp = 0;

/** A synchronous call of the main isolate: blocks this thread until the answer is in `shared`. */
function syncCall(id: number, method: string, args: unknown[], resource?: Resource): unknown {
  const call = ++syncCalls;
  expectAnswer(start.shared);
  post({
    type: "sync",
    request: { id, call, method, resource, args: cloneable(args) as unknown[] },
  });
  const answer = awaitAnswer(start.shared, call) as
    | { value?: unknown; error?: ReturnType<typeof encodeError> }
    | undefined;
  if (!answer) throw new Error(`no answer from the operator to ${method}`);
  if (answer.error) throw decodeError(answer.error);
  return answer.value;
}

/** An awaited call of the main isolate (a client request, `requesterMay`). */
function asyncCall(id: number, method: string, args: unknown[]): Promise<unknown> {
  const op = nextOp++;
  post({ type: "op", id, op, method, args: cloneable(args) as unknown[] });
  return new Promise((resolve, reject) => pending.set(op, { resolve, reject }));
}

function cacheOf(id: number) {
  return (resource: Resource) => ({
    get: (namespace: string | undefined, name: string) =>
      syncCall(id, "cache.get", [namespace, name], resource),
    list: (options?: unknown) => syncCall(id, "cache.list", [options], resource),
    ownedBy: (uid: string) => syncCall(id, "cache.ownedBy", [uid], resource),
  });
}

/** A client whose every method is a request the main isolate makes with the visit's client. */
function clientOf(id: number): unknown {
  const client: unknown = new Proxy({}, {
    get: (_, method) =>
      method === "fenced" || method === "urgent"
        ? () => client
        : typeof method === "string" && method !== "then"
        ? (...args: unknown[]) => asyncCall(id, `client.${method}`, args)
        : undefined,
  });
  return client;
}

const LEVELS = ["trace", "debug", "info", "warn", "warning", "error", "fatal"];

function loggerOf(id: number, properties: Record<string, unknown> = {}): Logger {
  const logger: Record<string, unknown> = {
    with: (more: Record<string, unknown>) => loggerOf(id, { ...properties, ...more }),
  };
  for (const level of LEVELS) {
    logger[level] = (message: string, props?: Record<string, unknown>) =>
      post({
        type: "log",
        id,
        level: level === "warn" ? "warning" : level,
        message: String(message),
        properties: cloneable({ ...properties, ...props }),
      });
  }
  return logger as unknown as Logger;
}

/** The registry's metrics: every call on one is made on the main isolate's metric of that name. */
const metrics = {
  counter: (name: string, help: string, labelNames: string[] = []) =>
    metric("counter", name, help, labelNames),
  gauge: (name: string, help: string, labelNames: string[] = []) =>
    metric("gauge", name, help, labelNames),
  histogram: (name: string, help: string, labelNames: string[], buckets: number[]) =>
    metric("histogram", name, help, labelNames, buckets),
} as unknown as Registry;

function metric(
  kind: "counter" | "gauge" | "histogram",
  name: string,
  help: string,
  labelNames: string[],
  buckets?: number[],
): unknown {
  return new Proxy({}, {
    get: (_, method) =>
      typeof method === "string"
        ? (...args: unknown[]) =>
          post({
            type: "metric",
            kind,
            name,
            help,
            labelNames: [...labelNames],
            buckets: buckets && [...buckets],
            method,
            args: cloneable(args) as unknown[],
          })
        : undefined,
  });
}

function contextOf(id: number, signal: AbortSignal) {
  return {
    client: clientOf(id),
    cache: cacheOf(id),
    installed: (resource: Resource) => syncCall(id, "installed", [], resource),
    problems: () => syncCall(id, "problems", []),
    requesterMay: (...args: unknown[]) => asyncCall(id, "requesterMay", args),
    log: loggerOf(id),
    events: {
      record: (object: KubeObject, event: unknown) =>
        post({ type: "event", id, object: cloneable(object), event: cloneable(event) }),
    },
    metrics,
    signal,
  };
}

async function run(plugin: Plugin, call: CallName, id: number, index: number, args: unknown[]) {
  const abort = new AbortController();
  calls.set(id, abort);
  const context = contextOf(id, abort.signal);
  const [first] = args as [never];
  switch (call) {
    case "reconcile":
      return await plugin.reconcile(first, context as never);
    case "finalize":
      return await plugin.finalize?.(first, context as never);
    case "filter":
      return !plugin.filter || plugin.filter(first);
    case "watchFilter": {
      const filter = plugin.watches?.[index].filter;
      return !filter || filter(first);
    }
    case "map":
      return plugin.watches![index].map(first, context as never);
    case "onDeleted":
      return plugin.onDeleted?.(first, { log: context.log, metrics });
    case "default":
      return await plugin.default?.(first, context as never);
    case "validate":
      return await plugin.validate?.(first, context as never);
  }
}

async function load(): Promise<Plugin> {
  const module = await import(start.url);
  const plugin = module[start.exportName];
  if (!looksLikePlugin(plugin) || plugin.name !== start.name) {
    throw new Error(`${start.url} no longer exports plugin ${start.name} as ${start.exportName}`);
  }
  return plugin;
}

load().then(
  (plugin) => {
    port.on("message", async (message: ToWorker) => {
      if (message.type === "abort") return calls.get(message.id)?.abort();
      if (message.type === "answer") {
        const waiting = pending.get(message.op);
        pending.delete(message.op);
        if (message.error) waiting?.reject(decodeError(message.error));
        else waiting?.resolve(message.value);
        return;
      }
      const { id, call, index, args } = message;
      try {
        const value = await run(plugin, call, id, index ?? 0, args);
        post({ type: "result", id, value: cloneable(value) });
      } catch (error) {
        post({ type: "result", id, error: encodeError(error) });
      } finally {
        calls.delete(id);
      }
    });
    post({ type: "ready" });
  },
  (error) => post({ type: "load-failed", message: (error as Error).message }),
);
