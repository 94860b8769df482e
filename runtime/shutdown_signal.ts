/** The process's shutdown: an AbortSignal for the first SIGTERM or SIGINT, and a way out on a later one. */
import { log as rootLog, type Logger } from "./observe/mod.ts";

/**
 * An AbortSignal that fires on the first SIGTERM or SIGINT: a graceful drain and lease release.
 * Repeats within `repeatWindowMs` are the same request (a terminal's Ctrl-C under `deno task`
 * reaches the operator twice: from the terminal, and forwarded by deno task); a signal after
 * that window forces an exit at once.
 */
export function shutdownSignal(
  log: Logger = rootLog("manager"),
  options: { repeatWindowMs?: number } = {},
): AbortSignal {
  const windowMs = options.repeatWindowMs ?? 2_000;
  const controller = new AbortController();
  let first: number | undefined;
  const handler = (signal: Deno.Signal) => () => {
    if (first === undefined) {
      first = performance.now();
      log.info("received {signal}; shutting down (again after {seconds} s to exit at once)", {
        signal,
        seconds: windowMs / 1000,
      });
      controller.abort();
    } else if (performance.now() - first < windowMs) {
      log.debug("{signal} again: already shutting down", { signal });
    } else {
      log.warn("{signal} again: exiting now, without finishing", { signal });
      Deno.exit(1);
    }
  };
  Deno.addSignalListener("SIGTERM", handler("SIGTERM"));
  Deno.addSignalListener("SIGINT", handler("SIGINT"));
  return controller.signal;
}
