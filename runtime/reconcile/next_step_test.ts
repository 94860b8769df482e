import { expect } from "expect";
import { ApiError } from "../../kube/errors.ts";
import { NotLeaderError } from "../../kube/write_fence.ts";
import type { Informer } from "../cache/mod.ts";
import { StaleCacheError } from "../cache/mod.ts";
import { PermanentError, TemporaryError } from "../plugin/mod.ts";
import { nextStep } from "./next_step.ts";

const conflict = () =>
  new ApiError({ code: 409, reason: "Conflict", message: "the object has been modified" });
const informer = { resource: { kind: "ConfigMap" }, namespace: "ns" } as unknown as Informer;

Deno.test("children and status written: forgotten, counted a success", () => {
  expect(nextStep({ kind: "reconciled", returnedChildren: true })).toEqual({
    forget: true,
    forgetRefusals: true,
    result: "success",
  });
  // A status alone leaves the refusal delay of its children as it was.
  expect(nextStep({ kind: "reconciled", returnedChildren: false })).toEqual({
    forget: true,
    result: "success",
  });
});

Deno.test("requeueAfterMs: a plain delay; with a paused write, the sooner wins", () => {
  expect(nextStep({ kind: "reconciled", requeueAfterMs: 5_000, returnedChildren: false }))
    .toEqual({ forget: true, requeue: { afterMs: 5_000 }, result: "requeue_after" });
  expect(nextStep({ kind: "reconciled", requeueAfterMs: 0, returnedChildren: false }).requeue)
    .toEqual({ afterMs: 0 });
  // The write-loop guard paused a write: looked at again when the pause ends, not before.
  expect(
    nextStep({
      kind: "reconciled",
      requeueAfterMs: 60_000,
      pausedForMs: 30_000,
      returnedChildren: true,
    }),
  ).toEqual({
    forget: true,
    forgetRefusals: true,
    requeue: { afterMs: 30_000 },
    result: "requeue_after",
  });
  expect(nextStep({ kind: "reconciled", pausedForMs: 12, returnedChildren: true }).requeue)
    .toEqual({ afterMs: 12 });
});

Deno.test("a refused child: an error, looked at again after the refusal delay", () => {
  expect(nextStep({ kind: "refused" })).toEqual({
    forget: true,
    requeue: { backoff: "refusal" },
    result: "error",
    errors: { panic: false, terminal: false },
  });
});

Deno.test("a temporary error: retried with the key's backoff, or after the delay it asks", () => {
  const plain = nextStep({ kind: "failed", error: new Error("boom"), cancelled: false });
  expect(plain).toEqual({
    requeue: { backoff: "failure" },
    result: "error",
    errors: { panic: false, terminal: false },
    log: {
      level: "warn",
      message: "reconcile of {object} failed, retrying in {delay} ms: {error}",
      throttled: true,
    },
    event: { reason: "ReconcileError", message: "boom" },
  });
  const asked = new TemporaryError("not yet", { retryAfterMs: 2_000 });
  expect(nextStep({ kind: "failed", error: asked, cancelled: false })).toMatchObject({
    requeue: { afterMs: 2_000 },
    event: { reason: "ReconcileError", message: "not yet" },
  });
  // Not forgotten: the backoff grows while it keeps failing.
  expect(plain.forget).toBeUndefined();
});

Deno.test("a permanent error: reported, counted terminal, not retried until it changes", () => {
  const error = new PermanentError("spec.size must be positive", { reason: "InvalidSpec" });
  expect(nextStep({ kind: "failed", error, cancelled: false })).toEqual({
    forget: true,
    result: "error",
    errors: { panic: false, terminal: true },
    log: {
      level: "error",
      message: "reconcile failed for good (not retried until it changes): {error}",
    },
    event: { reason: "InvalidSpec", message: "spec.size must be positive" },
  });
});

Deno.test("a bug in the plugin (a TypeError) counts as a panic and is retried", () => {
  const error = new TypeError("cannot read properties of undefined (reading 'spec')");
  expect(nextStep({ kind: "failed", error, cancelled: false })).toMatchObject({
    requeue: { backoff: "failure" },
    errors: { panic: true, terminal: false },
  });
});

Deno.test("a conflict retries quietly: no warning, no Event", () => {
  for (const error of [conflict(), new TemporaryError("wrapped", { cause: conflict() })]) {
    const step = nextStep({ kind: "failed", error, cancelled: false });
    expect(step.log?.level).toBe("debug");
    expect(step.event).toBeUndefined();
    expect(step.result).toBe("error");
  }
});

Deno.test("not the leader, or cancelled: counted, never retried (the next leader starts anew)", () => {
  for (
    const visit of [
      { kind: "failed" as const, error: new NotLeaderError("not the leader"), cancelled: false },
      { kind: "failed" as const, error: new Error("aborted"), cancelled: true },
    ]
  ) {
    expect(nextStep(visit)).toEqual({
      result: "error",
      errors: { panic: false, terminal: false },
      log: { level: "debug", message: "reconcile cancelled: {error}" },
    });
  }
});

Deno.test("a cache behind: the key is parked, nothing counted or written", () => {
  expect(nextStep({ kind: "behind" })).toEqual({ requeue: { park: true } });
  // Fell behind during the reconcile: refused at the fence, parked, counted a requeue.
  const error = new StaleCacheError(informer);
  expect(nextStep({ kind: "failed", error, cancelled: false })).toEqual({
    requeue: { park: true },
    result: "requeue",
  });
  // Unless the reconcile was cancelled anyway.
  expect(nextStep({ kind: "failed", error, cancelled: true }).requeue).toBeUndefined();
});

Deno.test("a deleted parent: forgotten and cleaned up; one being deleted: forgotten", () => {
  expect(nextStep({ kind: "gone" })).toEqual({ forget: true, cleanUp: true });
  expect(nextStep({ kind: "deleting" })).toEqual({ forget: true });
  expect(nextStep({ kind: "finalized-already" })).toEqual({ forget: true });
});

Deno.test("finalize: done, or retried with backoff whatever the error, 409 quietly", () => {
  expect(nextStep({ kind: "finalized" })).toEqual({
    forget: true,
    result: "success",
    log: { level: "info", message: "finalized; removed finalizer {finalizer}" },
  });
  // A permanent error would hold the object for ever: retried like any other.
  const failed = nextStep({
    kind: "finalize-failed",
    error: new PermanentError("bucket is locked"),
    cancelled: false,
  });
  expect(failed).toMatchObject({
    requeue: { backoff: "failure" },
    result: "error",
    errors: { panic: false, terminal: false },
    event: { reason: "FinalizeFailed", message: "bucket is locked" },
  });
  expect(nextStep({ kind: "finalize-failed", error: conflict(), cancelled: false })).toEqual({
    requeue: { backoff: "failure" },
    result: "error",
    errors: { panic: false, terminal: false },
  });
  expect(
    nextStep({ kind: "finalize-failed", error: new NotLeaderError("x"), cancelled: false }),
  ).toEqual({ result: "error", errors: { panic: false, terminal: false } });
});
