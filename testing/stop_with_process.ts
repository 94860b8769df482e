/**
 * Control planes still running when the test process is interrupted or exits are stopped too: an
 * interrupted run leaves no etcd or kube-apiserver behind.
 */

/** What can be stopped: gracefully (keeping its logs), or at once. */
export interface Stoppable {
  stop(options: { keepLogs?: boolean }): Promise<void>;
  killNow(): void;
}

const running = new Set<Stoppable>();
let listening = false;
let signalling = false;

let interrupted: Promise<unknown> | undefined;

/** The first SIGINT or SIGTERM stops every plane, keeping logs; repeats wait for that stop. */
function onInterrupt(): void {
  interrupted ??= Promise.all([...running].map((p) => p.stop({ keepLogs: true })))
    .finally(() => Deno.exit(130));
}

function onUnload(): void {
  for (const plane of running) plane.killNow();
}

/** Stops `plane` with the process: on SIGINT or SIGTERM (when `signals`), or at unload. */
export function stopWithProcess(plane: Stoppable, signals: boolean): void {
  running.add(plane);
  if (!listening) {
    listening = true;
    globalThis.addEventListener("unload", onUnload);
  }
  if (signals && !signalling) {
    signalling = true;
    Deno.addSignalListener("SIGINT", onInterrupt);
    Deno.addSignalListener("SIGTERM", onInterrupt);
  }
}

/** `plane` stopped on its own: forget it. */
export function stoppedOnItsOwn(plane: Stoppable): void {
  running.delete(plane);
  if (running.size) return;
  if (signalling) {
    signalling = false;
    Deno.removeSignalListener("SIGINT", onInterrupt);
    Deno.removeSignalListener("SIGTERM", onInterrupt);
  }
  if (listening) {
    listening = false;
    globalThis.removeEventListener("unload", onUnload);
  }
}
