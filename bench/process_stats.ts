/**
 * What a running process costs, read from outside it: its resident set (from `ps`, sampled over
 * time for the peak) and the CPU seconds it has used (from `/proc`), whatever it runs.
 */
import { sleep } from "../util/sleep.ts";

/** The resident set of a process, from `ps`, in MiB (0 once it is gone). */
export async function rssOf(pid: number): Promise<number> {
  const { stdout } = await new Deno.Command("ps", {
    args: ["-o", "rss=", "-p", String(pid)],
    stdout: "piped",
    stderr: "null",
  }).output();
  return (Number(new TextDecoder().decode(stdout).trim()) || 0) / 1024;
}

/**
 * CPU seconds the processes have used so far, to the clock tick (Linux's 100 a second), from
 * `/proc` (read by `cat`: Deno asks for every permission before it reads `/proc` itself).
 */
export async function cpuOf(pids: number[]): Promise<number> {
  const { stdout } = await new Deno.Command("cat", {
    args: pids.map((pid) => `/proc/${pid}/stat`),
    stdout: "piped",
    stderr: "null",
  }).output();
  let ticks = 0;
  for (const line of new TextDecoder().decode(stdout).split("\n")) {
    // utime and stime, after the command name (which may hold spaces) and its ")".
    const fields = line.split(") ")[1]?.split(" ");
    if (fields) ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / 100;
}

/** A process's RSS sampled until stopped. */
export interface RssSampler {
  readonly peak: number;
  readonly last: number;
  stop(): Promise<void>;
}

/** Samples a process's RSS every 250 ms until stopped; the peak and the last sample. */
export function rssSampler(pid: number): RssSampler {
  let peak = 0;
  let last = 0;
  let running = true;
  const sampling = (async () => {
    while (running) {
      const rssMiB = await rssOf(pid);
      if (rssMiB) {
        last = rssMiB;
        peak = Math.max(peak, rssMiB);
      }
      await sleep(250);
    }
  })();
  return {
    get peak() {
      return peak;
    },
    get last() {
      return last;
    },
    async stop() {
      running = false;
      await sampling;
    },
  };
}
