/** `deno task cluster` as a person uses it: it prints how to connect, and Ctrl-C leaves nothing behind. */
import { expect } from "expect";
import { loadClusterConfig } from "../kube/load_config.ts";
import { KubeClient } from "../kube/client.ts";
import { NAMESPACE } from "../kube/kinds.ts";
import { eventually } from "../testing/eventually.ts";
import { binariesTest } from "../testing/integration_test_case.ts";
import { liveGroupMembers } from "../testing/process.ts";
import { sweepOrphans } from "../testing/run_registry.ts";
import { startTask } from "./fixtures/task_process.ts";

/** Starts the cluster task as its own process and waits for its banner. */
async function startClusterTask(): Promise<
  {
    child: Deno.ChildProcess;
    kubeconfig: string;
    dir: string;
    pids: number[];
    output: () => string;
  }
> {
  const { child, output } = startTask("cluster");
  const banner = await eventually(() => {
    const pids = output().match(/Component PIDs: ([\d ]+)/)?.[1];
    const kubeconfig = output().match(/kubectl --kubeconfig (\S+) get namespaces/)?.[1];
    if (!pids || !kubeconfig) throw new Error(`no banner yet:\n${output()}`);
    return { pids: pids.trim().split(" ").map(Number), kubeconfig };
  }, { timeoutMs: 120_000, intervalMs: 200 });
  const dir = banner.kubeconfig.slice(0, banner.kubeconfig.lastIndexOf("/"));
  return { child, ...banner, dir, output };
}

async function alive(pids: number[]): Promise<number[]> {
  return (await Promise.all(pids.map(liveGroupMembers))).flat();
}

// These start their control planes in a child process, as a person would.
await binariesTest(
  "deno task cluster: usable kubeconfig; Ctrl-C stops every component",
  async (_binaries, t) => {
    const step = t.step.bind(t);
    await step("SIGINT (Ctrl-C) stops all five components", async () => {
      const task = await startClusterTask();
      expect(task.pids).toHaveLength(5);
      expect((await alive(task.pids)).length).toBeGreaterThanOrEqual(5);
      const client = new KubeClient(await loadClusterConfig({ kubeconfig: task.kubeconfig }));
      try {
        const ns = await client.get(NAMESPACE, "kube-system");
        expect(ns.metadata?.name).toBe("kube-system");
      } finally {
        client.close();
      }
      expect(task.output()).toMatch(/Kubernetes v1\.\d+\.\d+/);
      Deno.kill(task.child.pid, "SIGINT");
      const status = await task.child.status;
      expect(status.success).toBe(false); // 130, interrupted
      expect(await alive(task.pids)).toEqual([]);
      // An interrupted run keeps its logs for the person; this one needs none.
      await Deno.remove(task.dir, { recursive: true });
    });

    await step("a SIGKILLed owner's components are stopped by the next harness start", async () => {
      const task = await startClusterTask();
      Deno.kill(task.child.pid, "SIGKILL");
      await task.child.status;
      // Nothing could clean up: the components are orphans now.
      expect((await alive(task.pids)).length).toBeGreaterThanOrEqual(5);
      const lines: string[] = [];
      await sweepOrphans((line) => lines.push(line));
      expect(lines.join("\n")).toContain("orphaned component");
      await eventually(async () => expect(await alive(task.pids)).toEqual([]));
      await Deno.remove(task.dir, { recursive: true });
    });
  },
);
