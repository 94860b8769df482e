/**
 * The operator's side of a plugin host process (plugin_host.ts): starts it with the plugin to
 * run, relays the Worker's messages both ways as frames over its stdin and stdout, logs what it
 * prints on stderr (bounded), and kills it with SIGKILL, which, unlike `Worker.terminate()` in
 * Deno 2.9, stops a thread that spins. It says once that the host stopped: killed, exited, its
 * Worker stopped, or its stdout was not frames (a plugin that wrote to stdout).
 */
import type { Logger } from "../observe/mod.ts";
import { ownedChunks } from "../../util/owned_chunks.ts";
import { frameOf, readFrames } from "./frames.ts";
import { answerJson } from "./sync_answer.ts";
import type { FromHost, FromWorker, PluginSource, ToHost, ToWorker } from "./worker_protocol.ts";

/**
 * How to start a plugin host: the operator's own executable and its arguments (`plugin-host` in a
 * compiled binary; `run <permissions> …/plugin_host.ts` under `deno run`). The caller decides, so
 * that the runtime knows nothing of the command line.
 */
export interface HostCommand {
  /** The executable: the operator's own (`Deno.execPath()`). */
  command: string;
  /** Its arguments, ending with what makes it a plugin host. */
  args: string[];
}

/** A running plugin host. */
export interface PluginProcess {
  readonly pid: number;
  post(message: ToWorker): void;
  /** Hands the Worker, waiting in a synchronous call, its answer. */
  answer(call: number, answer: unknown): void;
  /** SIGKILLs the host (if it still runs) and waits until it is gone and its pipes are drained. */
  kill(): Promise<void>;
}

/** What a host tells. */
export interface ProcessEvents {
  message(message: FromWorker): void;
  /** It stopped, or must be: said once. */
  stopped(reason: string): void;
}

/** What a host may print on stderr into the log; the rest is read and dropped. */
const STDERR_LINES = 50;

/** Starts a host for `source`; throws when it cannot be started, saying which command. */
export function startPluginProcess(
  host: HostCommand,
  source: PluginSource,
  events: ProcessEvents,
  log: Logger,
): PluginProcess {
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(host.command, {
      args: host.args,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  } catch (error) {
    // Said on every call until it can (the operator lacks --allow-run, the executable is gone).
    throw new Error(
      `cannot start the plugin host of ${source.name} (${host.command} ${host.args.join(" ")}): ` +
        (error as Error).message,
    );
  }
  const input = child.stdin.getWriter();
  let said = false;
  const stop = (reason: string) => {
    if (said) return;
    said = true;
    events.stopped(reason);
  };
  const send = (message: ToHost) => {
    // A write to a host that died fails; its exit says so (below).
    input.write(frameOf(message)).catch(() => {});
  };
  const reading = (async () => {
    try {
      for await (const frame of readFrames(child.stdout)) {
        const message = frame as FromHost;
        if (message.type === "stopped") stop(`its Worker stopped (${message.reason})`);
        else events.message(message);
      }
    } catch (error) {
      stop(
        `its host's stdout is not the host's protocol (${(error as Error).message}): ` +
          `a plugin must not write to stdout (console.log goes to stderr)`,
      );
    }
  })();
  const printing = relayStderr(child.stderr, log.with({ plugin: source.name, pid: child.pid }));
  const gone = Promise.all([child.status, reading, printing]).then(([status]) => {
    stop(
      status.signal
        ? `its process ended by ${status.signal}`
        : `its process exited with code ${status.code}`,
    );
  });
  send({ type: "start", source });
  return {
    pid: child.pid,
    post: send,
    answer: (call, answer) => send({ type: "sync-answer", call, json: answerJson(answer) }),
    kill: async () => {
      said = true;
      try {
        child.kill("SIGKILL");
      } catch {
        // It exited already.
      }
      await input.close().catch(() => {});
      await gone;
    },
  };
}

/** Logs the first lines `stream` carries, and reads the rest so the host never blocks on it. */
async function relayStderr(stream: ReadableStream<Uint8Array>, log: Logger): Promise<void> {
  let lines = 0;
  let rest = "";
  const decoder = new TextDecoder();
  for await (const chunk of ownedChunks(stream)) {
    const all = (rest + decoder.decode(chunk, { stream: true })).split("\n");
    rest = all.pop()!.slice(0, 4096);
    for (const line of all) {
      lines++;
      if (lines <= STDERR_LINES) log.warn("plugin host: {line}", { line: line.slice(0, 4096) });
      else if (lines === STDERR_LINES + 1) {
        log.warn("plugin host: further output is not logged");
      }
    }
  }
  if (rest && lines < STDERR_LINES) log.warn("plugin host: {line}", { line: rest });
}
