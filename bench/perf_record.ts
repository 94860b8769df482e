/**
 * Records a running process with Linux `perf` (every thread, with call chains) for a stretch of
 * a bench, and splits the samples (bench/perf_split.ts). The process must run with
 * `--v8-flags=--perf-basic-prof`, PERF_V8_FLAG, so that its generated code has names.
 */
import { type PerfSplit, splitPerfSamples } from "./perf_split.ts";

/** What a Deno process needs for `perf` to tell its JavaScript apart. */
export const PERF_V8_FLAG = "--v8-flags=--perf-basic-prof";

/** Fails with what to do when `perf` cannot record here. */
export async function checkPerf(): Promise<void> {
  const fix = "--perf needs Linux perf (Debian: apt install linux-perf) and " +
    "/proc/sys/kernel/perf_event_paranoid at 2 or lower";
  let output: Deno.CommandOutput;
  try {
    output = await new Deno.Command("perf", {
      args: ["record", "-q", "-o", "/dev/null", "--", "true"],
      stdout: "null",
      stderr: "piped",
    }).output();
  } catch (error) {
    throw new Error(`${fix}: ${(error as Error).message}`);
  }
  if (!output.success) {
    throw new Error(`${fix}: ${new TextDecoder().decode(output.stderr).trim()}`);
  }
}

/** One `perf record` of one process, from `start` to `stop`. */
export class PerfRecord {
  readonly #child: Deno.ChildProcess;
  readonly #file: string;
  readonly #pid: number;

  private constructor(child: Deno.ChildProcess, file: string, pid: number) {
    this.#child = child;
    this.#file = file;
    this.#pid = pid;
  }

  /** Starts sampling `pid` at `frequency` a second into `file`. */
  static start(options: { pid: number; file: string; frequency?: number }): PerfRecord {
    const child = new Deno.Command("perf", {
      args: [
        "record",
        "-q",
        "-g",
        "-F",
        String(options.frequency ?? 499),
        "-p",
        String(options.pid),
        "-o",
        options.file,
      ],
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    return new PerfRecord(child, options.file, options.pid);
  }

  /** Stops sampling and writes the file (perf writes it on SIGINT). */
  async stop(): Promise<void> {
    try {
      this.#child.kill("SIGINT");
    } catch {
      // ended already: its status says how
    }
    const [status, stderr] = await Promise.all([
      this.#child.status,
      new Response(this.#child.stderr).text(),
    ]);
    // perf exits 0, or with the signal's code, after writing what it sampled.
    if (!status.success && status.signal !== "SIGINT" && status.code !== 130) {
      throw new Error(`perf record failed (${status.code}): ${stderr.trim()}`);
    }
  }

  /**
   * The split of what was sampled, read while the process's perf map (`/tmp/perf-PID.map`) is
   * still there; `root` is cut from file URLs.
   */
  async split(root: string): Promise<PerfSplit> {
    const output = await new Deno.Command("perf", {
      args: ["script", "-i", this.#file, "-F", "tid,ip,sym,dso"],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!output.success) {
      throw new Error(`perf script failed: ${new TextDecoder().decode(output.stderr).trim()}`);
    }
    return splitPerfSamples(new TextDecoder().decode(output.stdout), { pid: this.#pid, root });
  }
}
