/** `deno task dev`, the README's main command, as a newcomer runs it: a working demo, and Ctrl-C stops it all. */
import { expect } from "expect";
import { eventually } from "../testing/eventually.ts";
import { binariesTest } from "../testing/integration_test_case.ts";
import { liveGroupMembers, processTable } from "../testing/process.ts";
import { startTask } from "./fixtures/task_process.ts";

await binariesTest(
  "deno task dev: the demo comes up, and Ctrl-C stops everything",
  async (_binaries, t) => {
    const { child, output: text, drained } = startTask("dev");
    try {
      await t.step("it prints what the operator made and the commands to try", async () => {
        await eventually(() => expect(text()).toContain("Press Ctrl-C"), {
          timeoutMs: 180_000,
          intervalMs: 500,
        });
        expect(text()).toContain("Module consumer-pod");
        expect(text()).toMatch(
          /DaemonSet consumer-pod-consumer +consumer pods: consumer-pod-consumer-\S+, consumer-pod-consumer-\S+/,
        );
        expect(text()).toMatch(/kubectl --kubeconfig \S+admin\.kubeconfig get ptemplates/);
        expect(text()).toMatch(/curl -s http:\/\/127\.0\.0\.1:\d+\/metrics/);
      });

      await t.step("Ctrl-C stops the operator, then the control plane, and exits 0", async () => {
        const dir = text().match(/--kubeconfig (\S+)\/admin\.kubeconfig/)![1];
        const components = (await processTable()).filter((p) => p.command.includes(dir)).map((p) =>
          p.pgid
        );
        // etcd, kube-apiserver, controller-manager, scheduler, kwok
        expect(components.length).toBeGreaterThanOrEqual(5);
        child.kill("SIGINT");
        const status = await child.status;
        expect(status.code).toBe(0);
        expect(text()).toContain("stopping the operator, then the control plane");
        for (const pgid of components) expect(await liveGroupMembers(pgid)).toEqual([]);
      });
    } finally {
      try {
        child.kill("SIGKILL");
      } catch {
        // exited
      }
      await child.status;
      await drained;
    }
  },
);
