/**
 * The plugin host: a process of the operator's own executable (`<binary> plugin-host`, or this
 * module under `deno run`) that runs one plugin's Worker and relays between it and the operator,
 * frames (frames.ts) on stdin and stdout. It is a process so that the operator can always stop
 * it: Deno 2.9's `Worker.terminate()` does not stop a thread that spins in JavaScript, SIGKILL
 * stops a process. It exits when its stdin closes, so an operator that died leaves no host behind.
 */
import { frameOf, readFrames } from "./frames.ts";
import { type PluginThread, startPluginThread } from "./plugin_thread.ts";
import type { HostCommand } from "./plugin_process.ts";
import type { FromHost, ToHost } from "./worker_protocol.ts";

/**
 * The command that runs this module as a plugin host under `deno run` (a compiled binary runs
 * itself with `plugin-host` instead): no permission but reading `readable` (the plugin's files)
 * and, when the runtime is local files, the runtime's own (the Worker's module).
 * Its configuration (the import map that resolves `ptemplate-operator/…`) is found from the
 * working directory, which it shares with the operator.
 */
export function hostUnderDenoRun(readable: string[]): HostCommand {
  const runtime = new URL("../../", import.meta.url);
  const reads = runtime.protocol === "file:" ? [...readable, runtime.pathname] : readable;
  return {
    command: Deno.execPath(),
    args: [
      "run",
      "--no-prompt",
      ...(reads.length ? [`--allow-read=${reads.join(",")}`] : []),
      new URL(import.meta.url).href,
    ],
  };
}

/** Runs the host until the operator closes its stdin; returns the exit code. */
export async function runPluginHost(): Promise<number> {
  const out = Deno.stdout.writable.getWriter();
  const send = (message: FromHost) => {
    // The operator is gone when this fails: stdin's end follows and ends the host.
    out.write(frameOf(message)).catch(() => {});
  };
  let thread: PluginThread | undefined;
  try {
    for await (const frame of readFrames(Deno.stdin.readable)) {
      const message = frame as ToHost;
      if (message.type === "start") {
        try {
          thread ??= startPluginThread(message.source, {
            message: send,
            stopped: (reason) => send({ type: "stopped", reason }),
          });
        } catch (error) {
          send({ type: "stopped", reason: `it could not start: ${(error as Error).message}` });
        }
      } else if (message.type === "sync-answer") thread?.answer(message.call, message.json);
      else thread?.post(message);
    }
  } catch (error) {
    console.error(`plugin host: ${(error as Error).message}`);
    return 1;
  }
  return 0;
}

if (import.meta.main) runPluginHost().then((code) => Deno.exit(code));
