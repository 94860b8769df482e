/**
 * Remembers which control-plane processes a test process started, so that when that test
 * process dies without cleaning up (SIGKILL, a crash), the next harness start stops its orphans.
 */
import { cacheDir } from "./binaries.ts";
import { type ProcessInfo, processTable, signalGroup } from "./process.ts";

interface RunRecord {
  dir: string;
  owner: number;
  /** Start time of the owner, so a reused PID is not mistaken for it. */
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

let ownStart: Promise<string> | undefined;

/** This process's start time as `ps` reports it; looked up once. */
export function ownStartTime(): Promise<string> {
  ownStart ??= processTable().then((table) => table.find((p) => p.pid === Deno.pid)?.started ?? "");
  return ownStart;
}

/**
 * Notes the processes of the run in `dir`, writing synchronously so that a crash right after a
 * component starts cannot lose the record.
 */
export function recordRun(
  dir: string,
  ownerStart: string,
  pids: number[],
  binaries: string[],
): void {
  const record: RunRecord = { dir, owner: Deno.pid, ownerStart, pids, binaries };
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
  const table = await processTable().catch(() => undefined);
  if (!table) {
    log(
      "control plane: cannot list processes (`ps` missing?); orphans of killed runs are not swept",
    );
    return;
  }
  const byPid = new Map<number, ProcessInfo>(table.map((p) => [p.pid, p]));
  for (const entry of entries) {
    const path = `${registryDir()}/${entry.name}`;
    let record: RunRecord;
    try {
      record = JSON.parse(await Deno.readTextFile(path));
    } catch {
      continue;
    }
    // The owner still runs: the same process (PID and start time), and not a zombie, which is
    // dead but waits for its parent to reap it (`deno task` killed with it, or a PID 1 that
    // does not reap).
    const owner = byPid.get(record.owner);
    if (owner?.started === record.ownerStart && !owner.state.startsWith("Z")) continue;
    const killed: number[] = [];
    for (const pid of record.pids) {
      const process = byPid.get(pid);
      const binary = process?.command.split(" ")[0];
      if (process && !process.state.startsWith("Z") && binary && record.binaries.includes(binary)) {
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
