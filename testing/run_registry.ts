/**
 * Remembers which control-plane processes a test process started, so that when that test
 * process dies without cleaning up (SIGKILL, a crash), the next harness start stops its orphans.
 */
import { cacheDir } from "./binaries.ts";
import { liveGroupMembers, signalGroup } from "./process.ts";

interface RunRecord {
  dir: string;
  owner: number;
  /** Start time of the owner in clock ticks since boot, so a reused PID is not mistaken for it. */
  ownerStart: string;
  pids: number[];
  binaries: string[];
}

function registryDir(): string {
  return `${cacheDir()}/runs`;
}

function recordPath(dir: string): string {
  return `${registryDir()}/${dir.split("/").pop()}.json`;
}

function startTime(pid: number): string | undefined {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

/** Notes (synchronously, so it is never lost to a crash) the processes of the run in `dir`. */
export function recordRun(dir: string, pids: number[], binaries: string[]): void {
  const record: RunRecord = {
    dir,
    owner: Deno.pid,
    ownerStart: startTime(Deno.pid) ?? "",
    pids,
    binaries,
  };
  Deno.mkdirSync(registryDir(), { recursive: true });
  Deno.writeTextFileSync(recordPath(dir), JSON.stringify(record));
}

/** Drops the record of a run that was stopped properly. */
export async function forgetRun(dir: string): Promise<void> {
  await Deno.remove(recordPath(dir)).catch(() => {});
}

/**
 * Kills the process groups of runs whose owner is gone. A PID is only signalled while it still
 * runs one of the recorded binaries, so a PID the system reused for something else is left alone.
 */
export async function sweepOrphans(log: (line: string) => void = console.error): Promise<void> {
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(registryDir())];
  } catch {
    return;
  }
  for (const entry of entries) {
    const path = `${registryDir()}/${entry.name}`;
    let record: RunRecord;
    try {
      record = JSON.parse(await Deno.readTextFile(path));
    } catch {
      continue;
    }
    if (startTime(record.owner) === record.ownerStart) continue; // owner still running
    const killed: number[] = [];
    for (const pid of record.pids) {
      let exe: string;
      try {
        exe = Deno.readLinkSync(`/proc/${pid}/exe`);
      } catch {
        continue;
      }
      if (record.binaries.includes(exe) && liveGroupMembers(pid).length) {
        signalGroup(pid, "SIGKILL");
        killed.push(pid);
      }
    }
    if (killed.length) {
      log(
        `control plane: stopped ${killed.length} orphaned component(s) of a run whose test ` +
          `process died (PIDs ${killed.join(", ")}; logs in ${record.dir})`,
      );
    }
    await Deno.remove(path).catch(() => {});
  }
}
