/**
 * A plugin's Worker thread (plugin_worker.ts) with its heap cap, as the plugin host process
 * (plugin_host.ts) runs it: messages in and out, synchronous answers written into its
 * SharedArrayBuffer, and one call when it stops (an error, or its exit).
 */
import { Worker } from "node:worker_threads";
import { answerBuffer, writeAnswer } from "./sync_answer.ts";
import type { FromWorker, PluginSource, ToWorker, WorkerStart } from "./worker_protocol.ts";

/** A running plugin Worker. */
export interface PluginThread {
  post(message: ToWorker): void;
  /** Hands the Worker, waiting in a synchronous call, its answer (JSON). */
  answer(call: number, json: string): void;
}

/** What a Worker tells. */
export interface ThreadEvents {
  message(message: FromWorker): void;
  /** It stopped: it threw at the top, or exited. Said once. */
  stopped(reason: string): void;
}

/** Starts `source`'s plugin in a Worker of this process. */
export function startPluginThread(source: PluginSource, events: ThreadEvents): PluginThread {
  const shared = answerBuffer();
  const worker = new Worker(
    new URL("./plugin_worker.ts", import.meta.url),
    {
      workerData: {
        url: source.url,
        exportName: source.exportName,
        name: source.name,
        shared,
      } satisfies WorkerStart,
      resourceLimits: { maxOldGenerationSizeMb: source.heapLimitMb },
    } as ConstructorParameters<typeof Worker>[1],
  );
  let stopped = false;
  const stop = (reason: string) => {
    if (stopped) return;
    stopped = true;
    events.stopped(reason);
  };
  worker.on("message", (message: FromWorker) => events.message(message));
  worker.on("error", (error: Error) => stop(error.message));
  worker.on("exit", (code: number) => stop(`exit code ${code}`));
  return {
    post: (message) => worker.postMessage(message),
    answer: (call, json) => writeAnswer(shared, call, json),
  };
}
