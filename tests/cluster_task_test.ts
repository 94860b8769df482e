/**
 * `deno task cluster` killed outright (SIGKILL: nothing of it can clean up) leaves its components
 * running; the next control plane started anywhere on the machine stops them. (Its normal life,
 * Ctrl-C included, is in tests/user_paths_test.ts.)
 */
import { expect } from "expect";
import { eventually } from "../testing/eventually.ts";
import { binariesTest } from "../testing/integration_test_case.ts";
import { liveGroupMembers } from "../testing/process.ts";
import { sweepOrphans } from "../testing/run_registry.ts";
import { startCommand } from "./fixtures/documented_commands.ts";

async function alive(pids: number[]): Promise<number[]> {
  return (await Promise.all(pids.map(liveGroupMembers))).flat();
}

await binariesTest("deno task cluster: a SIGKILLed owner's components are swept", async () => {
  const task = startCommand(["deno", "task", "cluster"]);
  try {
    const [pids, folder] = await eventually(() => {
      const pids = task.output().match(/Component PIDs: ([\d ]+)\n/)?.[1];
      const kubeconfig = task.output().match(/export KUBECONFIG=(\S+)/)?.[1];
      if (!pids || !kubeconfig) throw new Error(`no banner yet:\n${task.output()}`);
      return [
        pids.trim().split(" ").map(Number),
        kubeconfig.slice(0, kubeconfig.lastIndexOf("/")),
      ] as const;
    }, { timeoutMs: 240_000, intervalMs: 200 });
    // `deno task` and the program it runs, at once: nothing of theirs can clean up.
    Deno.kill(-task.child.pid, "SIGKILL");
    await task.exited();
    expect((await alive(pids)).length).toBeGreaterThanOrEqual(5);
    const lines: string[] = [];
    await sweepOrphans((line) => lines.push(line));
    expect(lines.join("\n")).toContain("orphaned component");
    await eventually(async () => expect(await alive(pids)).toEqual([]));
    await Deno.remove(folder, { recursive: true });
  } finally {
    try {
      Deno.kill(-task.child.pid, "SIGKILL");
    } catch {
      // exited
    }
    await task.exited();
  }
});
