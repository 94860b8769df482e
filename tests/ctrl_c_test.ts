/**
 * Ctrl-C under `deno task start`, signalled the way a terminal does (to the whole process group,
 * so the operator hears it from the terminal and again from deno task): one graceful drain, the
 * lease released, and a standby leading within one retry period.
 */
import { expect } from "expect";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { type LogLine, OperatorRun } from "./fixtures/operator_command.ts";

const RETRY_MS = 2_000;

await integrationTest("Ctrl-C under deno task start drains and hands over", {
  crds: [new URL("../crds/ptemplates.pt.example.com.yaml", import.meta.url)],
}, async (plane, step) => {
  const flags = [
    `--kubeconfig=${plane.adminKubeconfigPath}`,
    "--leader-elect",
    "--leader-election-namespace=default",
    "--metrics-bind-address=0",
    "--health-probe-bind-address=0",
    "--log-format=json",
  ];
  // `deno task start -- …`, in a process group of its own, as a shell starts a job.
  const task = new Deno.Command(Deno.execPath(), {
    args: ["task", "start", "--", ...flags],
    cwd: new URL("..", import.meta.url).pathname,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
    detached: true,
  }).spawn();
  const lines: LogLine[] = [];
  const following = (async () => {
    let buffered = "";
    for await (const chunk of task.stderr.pipeThrough(new TextDecoderStream())) {
      buffered += chunk;
      const parts = buffered.split("\n");
      buffered = parts.pop()!;
      for (const part of parts) {
        if (part.startsWith("{")) lines.push(JSON.parse(part));
      }
    }
  })();
  const said = (list: LogLine[], pattern: RegExp) => list.find((l) => pattern.test(l.msg));
  let standby: OperatorRun | undefined;
  try {
    await step("Ctrl-C: one drain, the lease released, the standby leads at once", async () => {
      await eventually(() => expect(said(lines, /^became leader/)).toBeDefined(), {
        timeoutMs: 60_000,
      });
      standby = OperatorRun.start(["run", ...flags.filter((f) => f !== "--log-format=json")]);
      await eventually(() => expect(said(standby!.lines, /^campaigning/)).toBeDefined());
      const pressed = Date.now();
      // What the terminal does on Ctrl-C: SIGINT to every process of the foreground group.
      Deno.kill(-task.pid, "SIGINT");
      const status = await task.status;
      await following;
      expect(status.code).toBe(0);
      expect(said(lines, /^released lease/)).toBeDefined();
      expect(lines.filter((l) => /^received SIGINT/.test(l.msg))).toHaveLength(1);
      expect(said(lines, /exiting now/)).toBeUndefined();
      const led = await eventually(() => {
        const line = said(standby!.lines, /^became leader/);
        expect(line).toBeDefined();
        return Date.parse(line!.time);
      }, { timeoutMs: 20_000 });
      console.error(`    the standby led ${led - pressed} ms after Ctrl-C`);
      expect(led - pressed).toBeLessThan(RETRY_MS);
    });
  } finally {
    try {
      Deno.kill(-task.pid, "SIGKILL");
    } catch {
      // gone already
    }
    await task.status;
    if (standby) expect((await standby.stop()).code).toBe(0);
  }
});
