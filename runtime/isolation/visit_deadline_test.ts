import { expect } from "expect";
import * as FakeTimers from "@sinonjs/fake-timers";
import { ReconcileTimeoutError, VisitDeadline } from "./visit_deadline.ts";

Deno.test("a visit's signal follows every signal it was joined to, until the visit ends", () => {
  const manager = new AbortController();
  const shard = new AbortController();
  const deadline = new VisitDeadline(1_000, manager.signal);
  deadline.follow(shard.signal);
  shard.abort(new Error("shard 2 lost"));
  expect(deadline.signal.aborted).toBe(true);
  expect((deadline.signal.reason as Error).message).toBe("shard 2 lost");
  // Aborted from outside, not expired: writes are fenced by the shard, not by the deadline.
  expect(deadline.expired).toBeUndefined();
  expect(deadline.fence).not.toThrow();

  const later = new VisitDeadline(1_000, manager.signal);
  const other = new AbortController();
  later.follow(other.signal);
  later.end();
  other.abort();
  manager.abort();
  expect(later.signal.aborted).toBe(false);

  const already = new VisitDeadline(1_000, new AbortController().signal);
  already.follow(AbortSignal.abort("gone"));
  expect(already.signal.reason).toBe("gone");
});

Deno.test("past its deadline a visit is abandoned: the race rejects, the fence refuses", async () => {
  const time = FakeTimers.install({ toFake: ["setTimeout", "clearTimeout"] });
  try {
    const deadline = new VisitDeadline(2_000, new AbortController().signal);
    const raced = deadline.race(new Promise<never>(() => {}));
    raced.catch(() => {});
    await time.tickAsync(1_999);
    expect(deadline.expired).toBeUndefined();
    await time.tickAsync(1);
    await expect(raced).rejects.toBeInstanceOf(ReconcileTimeoutError);
    expect(deadline.signal.aborted).toBe(true);
    expect(deadline.fence).toThrow(/within its deadline of 2 s/);
    deadline.end();
  } finally {
    time.uninstall();
  }
});
