/** `deno task dev`, the README's main command, as a newcomer runs it: a working demo, and Ctrl-C stops it all. */
import { expect } from "expect";
import { eventually } from "../testing/eventually.ts";
import { binariesTest } from "../testing/integration_test_case.ts";
import { liveGroupMembers, processTable } from "../testing/process.ts";

const DEV_TASK = JSON.parse(await Deno.readTextFile(new URL("../deno.json", import.meta.url))).tasks
  .dev
  .command as string;

await binariesTest(
  "deno task dev: the demo comes up, and Ctrl-C stops everything",
  async (_binaries, t) => {
    const [, ...args] = DEV_TASK.split(/\s+/);
    const child = new Deno.Command(Deno.execPath(), {
      args,
      cwd: new URL("..", import.meta.url).pathname,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    let output = "";
    const pump = async (stream: ReadableStream<Uint8Array>) => {
      for await (const chunk of stream.pipeThrough(new TextDecoderStream())) output += chunk;
    };
    const pumping = Promise.all([pump(child.stdout), pump(child.stderr)]);
    try {
      await t.step("it prints what the operator made and the commands to try", async () => {
        await eventually(() => expect(output).toContain("Press Ctrl-C"), {
          timeoutMs: 180_000,
          intervalMs: 500,
        });
        expect(output).toContain("Module consumer-pod");
        expect(output).toMatch(
          /DaemonSet consumer-pod-consumer +consumer pods: consumer-pod-consumer-\S+, consumer-pod-consumer-\S+/,
        );
        expect(output).toMatch(/kubectl --kubeconfig \S+admin\.kubeconfig get ptemplates/);
        expect(output).toMatch(/curl -s http:\/\/127\.0\.0\.1:\d+\/metrics/);
      });

      await t.step("Ctrl-C stops the operator, then the control plane, and exits 0", async () => {
        const dir = output.match(/--kubeconfig (\S+)\/admin\.kubeconfig/)![1];
        const components = (await processTable()).filter((p) => p.command.includes(dir)).map((p) =>
          p.pgid
        );
        // etcd, kube-apiserver, controller-manager, scheduler, kwok
        expect(components.length).toBeGreaterThanOrEqual(5);
        child.kill("SIGINT");
        const status = await child.status;
        expect(status.code).toBe(0);
        expect(output).toContain("stopping the operator, then the control plane");
        for (const pgid of components) expect(await liveGroupMembers(pgid)).toEqual([]);
      });
    } finally {
      try {
        child.kill("SIGKILL");
      } catch {
        // exited
      }
      await child.status;
      await pumping;
    }
  },
);
