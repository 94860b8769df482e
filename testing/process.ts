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
  const { stdout, success } = await new Deno.Command("ps", {
    args: ["-e", "-o", "pid=,pgid=,stat=,lstart=,args="],
    stdout: "piped",
    stderr: "null",
    env: { LC_ALL: "C" },
  }).output();
  if (!success) throw new Error("`ps -e` failed");
  return new TextDecoder().decode(stdout).split("\n").filter((l) => l.trim()).map((line) => {
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
