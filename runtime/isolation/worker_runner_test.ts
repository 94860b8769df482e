import { expect } from "expect";
import { PermanentError } from "../plugin/mod.ts";
import type { KubeObject, Stored } from "../../kube/object.ts";
import { log, Registry } from "../observe/mod.ts";
import type { Plugin, ReconcileContext } from "../plugin/mod.ts";
import { allocator, reader, spinner } from "./testdata/worker_plugins.ts";
import { ReconcileTimeoutError, VisitDeadline, WorkerInterruptedError } from "./visit_deadline.ts";
import { workerRunner } from "./worker_runner.ts";

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
