import { expect } from "expect";
import { type Clock, Instant } from "../../util/clock.ts";
import { type Lease, LeaseView } from "./lease_view.ts";

/** A clock the test moves: both readings together. */
class TestClock implements Clock {
  #ms = 50_000;
  monotonicMs = () => this.#ms;
  wallMs = () => Date.UTC(2026, 0, 1) + this.#ms;
  advance(ms: number) {
    this.#ms += ms;
  }
}

const lease = (holder: string | undefined, resourceVersion: string, seconds = 15): Lease => ({
  metadata: { name: "l", resourceVersion },
  spec: { holderIdentity: holder, leaseDurationSeconds: seconds },
});

Deno.test("another holder's lease runs out its duration after the change last seen", () => {
  const clock = new TestClock();
  const view = new LeaseView(clock);
  expect(view.seen).toBe(false);
  expect(view.looksFree("me")).toBe(false);
  view.observe(lease("other", "1"), Instant.now(clock));
  expect(view.heldByAnother("me")).toBe(true);
  clock.advance(10_000);
  // The same record again (a renewal we missed looks the same): no change, the count goes on.
  view.observe(lease("other", "2"), Instant.now(clock));
  expect(view.expiresInMs()).toBe(5_000);
  expect(view.resourceVersion).toBe("2");
  clock.advance(5_000);
  expect(view.heldByAnother("me")).toBe(false);
  expect(view.looksFree("me")).toBe(true);
});

Deno.test("a changed record restarts the count; ours is never held by another", () => {
  const clock = new TestClock();
  const view = new LeaseView(clock);
  view.observe(lease("other", "1"), Instant.now(clock));
  clock.advance(14_000);
  view.observe(
    { ...lease("other", "2"), spec: { holderIdentity: "other", renewTime: "x" } },
    Instant.now(clock),
  );
  expect(view.holderIdentity).toBe("other");
  view.observe(lease("me", "3"), Instant.now(clock));
  expect(view.heldByAnother("me")).toBe(false);
  expect(view.heldByAnother("third")).toBe(true);
});

Deno.test("the newest version wins; a 410 forgets where to watch from", () => {
  const clock = new TestClock();
  const view = new LeaseView(clock);
  view.observe(lease("me", "7"), Instant.now(clock));
  view.observe(lease("me", "5"), Instant.now(clock));
  expect(view.latest?.metadata?.resourceVersion).toBe("7");
  view.forgetResourceVersion();
  expect(view.resourceVersion).toBe("");
  view.observe(undefined, Instant.now(clock));
  expect(view.latest).toBeUndefined();
});
