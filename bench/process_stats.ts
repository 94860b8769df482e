/**
 * What a running process costs, read from outside it: its resident set (from `ps`, sampled over
 * time for the peak) and the CPU seconds it has used (from `/proc`), whatever it runs.
 */
import { parseThreadStats, type ThreadStat, threadStats } from "../testing/process.ts";
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
  // A process's stat line has the shape of a thread's.
  const processes = parseThreadStats(new TextDecoder().decode(stdout));
  return processes.reduce((sum, p) => sum + p.userTicks + p.systemTicks, 0) / 100;
}

/**
 * CPU seconds a process's threads have used so far, summed by thread name (`deno` for the main
 * thread, `V8 DefaultWorke` for V8's helpers, `tokio-runtime-w`...), each as user and system time.
 */
export async function threadCpuOf(pid: number): Promise<ThreadCpu[]> {
  return threadCpuByName(await threadStats(pid));
}

/** CPU seconds of the threads named `name`: user and system time. */
export interface ThreadCpu {
  name: string;
  user: number;
  system: number;
}

/** Sums `threads` by name, largest first. */
export function threadCpuByName(threads: ThreadStat[]): ThreadCpu[] {
  const byName = new Map<string, { user: number; system: number }>();
  for (const thread of threads) {
    const sum = byName.get(thread.name) ?? { user: 0, system: 0 };
    sum.user += thread.userTicks;
    sum.system += thread.systemTicks;
    byName.set(thread.name, sum);
  }
  return [...byName].map(([name, ticks]) => ({
    name,
    user: ticks.user / 100,
    system: ticks.system / 100,
  })).sort((a, b) => b.user + b.system - a.user - a.system || a.name.localeCompare(b.name));
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
