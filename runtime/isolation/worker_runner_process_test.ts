/**
 * Plugins in Workers in plugin hosts, processes of their own under `deno run`. Named
 * `_process_test` because each starts a host: `deno task test:unit` runs no program.
 */
import { expect } from "expect";
import { eventually } from "../../testing/eventually.ts";
import { busiestThread, childProcesses, threadCpuTicks } from "../../testing/process.ts";
import { sleep } from "../../util/sleep.ts";
import { PermanentError } from "../plugin/mod.ts";
import type { KubeObject, Stored } from "../../kube/object.ts";
import { log, Registry } from "../observe/mod.ts";
import type { Plugin, ReconcileContext } from "../plugin/mod.ts";
import { allocator, printer, reader, spinner } from "./testdata/worker_plugins.ts";
import { ReconcileTimeoutError, VisitDeadline, WorkerInterruptedError } from "./visit_deadline.ts";
import { workerRunner } from "./worker_runner.ts";
import { hostUnderDenoRun } from "./plugin_host.ts";

const URL_OF = new URL("./testdata/worker_plugins.ts", import.meta.url).href;

function configMap(name: string, data: Record<string, string> = {}): Stored<KubeObject> {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: "ns", uid: name, resourceVersion: "1" },
    data,
  } as Stored<KubeObject>;
}

function runnerOf(plugin: Plugin, exportName: string, registry = new Registry()) {
  return workerRunner(plugin, {
    host: hostUnderDenoRun([new URL("./testdata/", import.meta.url).pathname]),
    url: URL_OF,
    exportName,
    heapLimitMb: 32,
    callTimeoutMs: 2_000,
    log: log("test"),
    metrics: registry,
  });
}

function contextOf(objects: Stored<KubeObject>[]): ReconcileContext {
  return {
    cache: () => ({
      get: (_: string | undefined, name: string) => objects.find((o) => o.metadata.name === name),
      list: () => objects,
      ownedBy: () => [],
    }),
    installed: () => true,
    problems: () => [],
    log: log("test"),
    events: { record: () => {} },
    metrics: new Registry(),
    signal: new AbortController().signal,
  } as unknown as ReconcileContext;
}

const within = (ms: number) => new VisitDeadline(ms, new AbortController().signal);

Deno.test("a plugin in a Worker reads the cache synchronously and its errors keep their class", async () => {
  const registry = new Registry();
  const runner = runnerOf(reader, "reader", registry);
  try {
    const context = contextOf([configMap("other", { value: "42" })]);
    const outcome = await runner.reconcile(configMap("a"), context, within(10_000));
    expect(outcome).toEqual({ status: { seen: "42", installed: true } });
    const failure = runner.reconcile(configMap("bad"), context, within(10_000));
    await expect(failure).rejects.toBeInstanceOf(PermanentError);
    await expect(failure).rejects.toMatchObject({ reason: "Bad" });
    expect(registry.render()).toContain("reader_visits_total 2");
  } finally {
    await runner.close();
  }
});

Deno.test("a busy loop past its deadline ends the Worker; a call beside it is interrupted; the next call gets a new Worker", async () => {
  const runner = runnerOf(spinner, "spinner");
  try {
    const context = contextOf([]);
    const beside = runner.reconcile(configMap("slow"), context, within(60_000));
    const spin = runner.reconcile(configMap("spin"), context, within(500));
    await expect(spin).rejects.toBeInstanceOf(ReconcileTimeoutError);
    await expect(beside).rejects.toBeInstanceOf(WorkerInterruptedError);
    expect(await runner.reconcile(configMap("ok"), context, within(60_000))).toEqual({
      requeueAfterMs: 1,
    });
    const hang = runner.reconcile(configMap("hang"), context, within(300));
    await expect(hang).rejects.toMatchObject({ by: "deadline" });
  } finally {
    await runner.close();
  }
});

Deno.test("a Worker whose heap reaches its cap stops; the call fails at its deadline and a new Worker serves the next", async () => {
  const runner = runnerOf(allocator, "allocator");
  try {
    const call = runner.reconcile(configMap("a"), contextOf([]), within(3_000));
    await expect(call).rejects.toBeInstanceOf(ReconcileTimeoutError);
    const again = runner.reconcile(configMap("b"), contextOf([]), within(3_000));
    await expect(again).rejects.toBeInstanceOf(ReconcileTimeoutError);
  } finally {
    await runner.close();
  }
});

/** The plugin hosts this process runs (other test files of this process may run other children). */
const hosts = async (of = Deno.pid) =>
  (await childProcesses(of)).filter((p) => p.command.includes("plugin_host.ts")).map((p) => p.pid);

Deno.test("a plugin that spins is stopped: past its deadline its process is gone and no thread burns a core", async () => {
  const runner = runnerOf(spinner, "spinner");
  try {
    const context = contextOf([]);
    await runner.reconcile(configMap("ok"), context, within(60_000));
    const [host] = await hosts();
    expect(host).toBeDefined();
    const spin = runner.reconcile(configMap("spin"), context, within(3_000));
    const spinning = await threadCpuTicks(host);
    await sleep(1_500);
    // The measure sees a spin: the host's busiest thread gained CPU time (an idle one gains none).
    expect(busiestThread(spinning, await threadCpuTicks(host))).toBeGreaterThan(10);
    await expect(spin).rejects.toBeInstanceOf(ReconcileTimeoutError);
    await eventually(async () => expect(await hosts()).toEqual([]), { timeoutMs: 10_000 });
  } finally {
    await runner.close();
  }
  expect(await hosts()).toEqual([]);
  // No thread of the runner's process spins instead (Worker.terminate() would have left one),
  // watched in a process of its own: this one runs other test files' threads. Over 2 s a spinning
  // thread gains ~200 ticks; none of its threads may gain half of that.
  const owner = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("./testdata/spin_owner.ts", import.meta.url).pathname],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = owner.stdout.pipeThrough(new TextDecoderStream()).getReader();
  try {
    expect(JSON.parse((await reader.read()).value ?? "null")).toEqual({ ended: "timeout" });
    await eventually(async () => expect(await hosts(owner.pid)).toEqual([]), {
      timeoutMs: 10_000,
    });
    const before = await threadCpuTicks(owner.pid);
    await sleep(2_000);
    expect(busiestThread(before, await threadCpuTicks(owner.pid))).toBeLessThan(100);
  } finally {
    owner.kill("SIGKILL");
    await owner.status;
    await reader.cancel();
  }
});

Deno.test("a plugin host outlives neither its runner's close nor its operator's SIGKILL", async () => {
  const runner = runnerOf(spinner, "spinner");
  const slow = runner.reconcile(configMap("slow"), contextOf([]), within(60_000));
  const interrupted = expect(slow).rejects.toBeInstanceOf(WorkerInterruptedError);
  await eventually(async () => expect(await hosts()).toHaveLength(1));
  await runner.close();
  await interrupted;
  expect(await hosts()).toEqual([]);

  const owner = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("./testdata/host_owner.ts", import.meta.url).pathname],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = owner.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const pid = Number((await reader.read()).value);
  await eventually(async () => expect(await hosts(pid)).toHaveLength(1), { timeoutMs: 30_000 });
  const [host] = await hosts(pid);
  const start = await threadCpuTicks(host);
  await eventually(
    async () => expect(busiestThread(start, await threadCpuTicks(host))).toBeGreaterThan(10),
    {
      timeoutMs: 30_000,
    },
  );
  // The host spins on: the owner dies by SIGKILL, and the host sees its stdin close.
  owner.kill("SIGKILL");
  await owner.status;
  await reader.cancel();
  await eventually(async () => {
    const alive = (await childProcesses(1)).concat(await childProcesses(pid));
    expect(alive.map((p) => p.pid)).not.toContain(host);
    expect(await threadCpuTicks(host)).toEqual(new Map());
  }, { timeoutMs: 10_000 });
});

Deno.test("what a plugin prints cannot garble its host's messages: console goes to stderr, a raw write to stdout ends the host, saying why", async () => {
  const runner = runnerOf(printer, "printer");
  try {
    const context = contextOf([]);
    expect(await runner.reconcile(configMap("a"), context, within(60_000))).toEqual({
      status: { printed: true },
    });
    const raw = runner.reconcile(configMap("raw"), context, within(60_000));
    await expect(raw).rejects.toBeInstanceOf(ReconcileTimeoutError);
    await expect(raw).rejects.toThrow(/a plugin must not write to stdout/);
    expect(await runner.reconcile(configMap("b"), context, within(60_000))).toEqual({
      status: { printed: true },
    });
  } finally {
    await runner.close();
  }
  expect(await hosts()).toEqual([]);
});

Deno.test("a host that cannot start fails each call, naming the command", async () => {
  const runner = workerRunner(reader, {
    host: { command: "/nonexistent/operator", args: ["plugin-host"] },
    url: URL_OF,
    exportName: "reader",
    heapLimitMb: 32,
    callTimeoutMs: 2_000,
    log: log("test"),
    metrics: new Registry(),
  });
  try {
    const call = runner.reconcile(configMap("a"), contextOf([]), within(10_000));
    await expect(call).rejects.toThrow(
      /cannot start the plugin host of reader \(\/nonexistent\/operator plugin-host\)/,
    );
  } finally {
    await runner.close();
  }
});
