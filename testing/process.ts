/** Runs one control-plane component in its own process group, logging to a file, and stops it for sure. */

/** How to start a component. */
export interface ProcessSpec {
  name: string;
  command: string;
  args: string[];
  /** Output of stdout and stderr, appended. */
  logFile: string;
  env?: Record<string, string>;
  cwd?: string;
}

/** A running component. `stop()` is idempotent and always leaves no process of its group behind. */
export class ManagedProcess {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  readonly exited: Promise<Deno.CommandStatus>;
  #status?: Deno.CommandStatus;

  private constructor(spec: ProcessSpec, child: Deno.ChildProcess) {
    this.name = spec.name;
    this.pid = child.pid;
    this.logFile = spec.logFile;
    this.exited = child.status.then((status) => (this.#status = status));
  }

  /**
   * Starts the process as the leader of a new process group (`detached`), so that stopping it
   * also stops anything it forked. It writes its output to the log file itself (through `sh`'s
   * redirection, then `exec`, so the PID is the component's): no pipe to us means no lost log
   * lines and no SIGPIPE if the test process dies first.
   */
  static start(spec: ProcessSpec): ManagedProcess {
    const child = new Deno.Command("/bin/sh", {
      args: ["-c", 'exec "$0" "$@" >>"$PTEMPLATE_LOG_FILE" 2>&1', spec.command, ...spec.args],
      env: { ...spec.env, PTEMPLATE_LOG_FILE: spec.logFile },
      cwd: spec.cwd,
      stdin: "null",
      stdout: "null",
      stderr: "null",
      detached: true,
    }).spawn();
    return new ManagedProcess(spec, child);
  }

  /** The exit status once it has exited, else undefined. */
  get status(): Deno.CommandStatus | undefined {
    return this.#status;
  }

  /** SIGTERM to the group, SIGKILL to the group after `graceMs`, then wait for the exit. */
  async stop(graceMs = 5_000): Promise<void> {
    if (!this.#status) {
      signalGroup(this.pid, "SIGTERM");
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timedOut = new Promise<"timeout">((resolve) => {
        timer = setTimeout(() => resolve("timeout"), graceMs);
      });
      if (await Promise.race([this.exited, timedOut]) === "timeout") {
        signalGroup(this.pid, "SIGKILL");
        await this.exited;
      }
      clearTimeout(timer);
    }
    // Children that ignored SIGTERM may survive their leader; the group id outlives it.
    signalGroup(this.pid, "SIGKILL");
  }
}

/** Signals every process in the group led by `pgid`; a group that is gone already is fine. */
export function signalGroup(pgid: number, signal: Deno.Signal): void {
  try {
    Deno.kill(-pgid, signal);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound) && !String(error).includes("ESRCH")) throw error;
  }
}

/** One row of the process table. */
export interface ProcessInfo {
  pid: number;
  pgid: number;
  /** `ps` state letters; `Z` is a zombie. */
  state: string;
  /** Start time as `ps` prints it; with the PID it identifies a process across PID reuse. */
  started: string;
  command: string;
}

/**
 * The process table, through `ps` (Deno grants `/proc` only with --allow-all, and `ps` needs
 * only the run permission we already have).
 */
export async function processTable(): Promise<ProcessInfo[]> {
  return (await ps("pid=,pgid=,stat=,lstart=,args=")).map((line) => {
    const [pid, pgid, state, ...rest] = line.trim().split(/\s+/);
    // lstart is five words: "Sat Nov 21 05:51:51 2026".
    return {
      pid: Number(pid),
      pgid: Number(pgid),
      state,
      started: rest.slice(0, 5).join(" "),
      command: rest.slice(5).join(" "),
    };
  });
}

/**
 * The live (not zombie) processes in group `pgid`. Zombies are ignored: in a container whose
 * PID 1 does not reap, an orphan's corpse can linger but runs nothing.
 */
export async function liveGroupMembers(pgid: number): Promise<number[]> {
  return (await processTable())
    .filter((p) => p.pgid === pgid && !p.state.startsWith("Z"))
    .map((p) => p.pid);
}

/** The live (not zombie) children of process `ppid`, with their command lines. */
export async function childProcesses(ppid: number): Promise<{ pid: number; command: string }[]> {
  return (await ps("pid=,ppid=,stat=,args=")).flatMap((line) => {
    const [pid, parent, state, ...command] = line.trim().split(/\s+/);
    return Number(parent) === ppid && state && !state.startsWith("Z")
      ? [{ pid: Number(pid), command: command.join(" ") }]
      : [];
  });
}

/** One thread of a process: its id, its name, and the CPU it has used in clock ticks of 10 ms. */
export interface ThreadStat {
  tid: number;
  name: string;
  userTicks: number;
  systemTicks: number;
}

/**
 * Each thread of process `pid`: `/proc/PID/task/TID/stat`, read through `cat` (Deno grants
 * `/proc` only with --allow-all). A thread that spins gains about 100 ticks a second; an idle one,
 * none. Empty once the process is gone.
 */
export async function threadStats(pid: number): Promise<ThreadStat[]> {
  const { stdout } = await new Deno.Command("sh", {
    args: ["-c", `cat /proc/${pid}/task/*/stat 2>/dev/null`],
    stdout: "piped",
    stderr: "null",
  }).output();
  return parseThreadStats(new TextDecoder().decode(stdout));
}

/** The threads in `text`, lines of `/proc/PID/task/TID/stat`. */
export function parseThreadStats(text: string): ThreadStat[] {
  return text.split("\n").flatMap((line) => {
    // The name (field 2) may hold spaces and parentheses: the fields after its last ") " follow.
    const open = line.indexOf(" (");
    const close = line.lastIndexOf(") ");
    if (open < 0 || close < open) return [];
    const fields = line.slice(close + 2).split(" ");
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    return [{
      tid: Number(line.slice(0, open)),
      name: line.slice(open + 2, close),
      userTicks: Number(fields[11]),
      systemTicks: Number(fields[12]),
    }];
  });
}

/** The CPU ticks (user and system) each thread of process `pid` has used, by thread id. */
export async function threadCpuTicks(pid: number): Promise<Map<number, number>> {
  return new Map((await threadStats(pid)).map((t) => [t.tid, t.userTicks + t.systemTicks]));
}

/** The most CPU ticks any one thread of `pid` gained from `before` to `after`. */
export function busiestThread(before: Map<number, number>, after: Map<number, number>): number {
  let most = 0;
  for (const [tid, ticks] of after) most = Math.max(most, ticks - (before.get(tid) ?? 0));
  return most;
}

/** The lines of `ps -e` with these columns, one per process. */
async function ps(columns: string): Promise<string[]> {
  const { stdout, success } = await new Deno.Command("ps", {
    args: ["-e", "-o", columns],
    stdout: "piped",
    stderr: "null",
    env: { LC_ALL: "C" },
  }).output();
  if (!success) throw new Error("`ps -e` failed");
  return new TextDecoder().decode(stdout).split("\n").filter((l) => l.trim());
}
