import { expect } from "expect";
import { log } from "../observe/mod.ts";
import { sleep } from "../../util/sleep.ts";
import { ControllerGroup, type GroupMember, type PendingEvents } from "./controller_group.ts";

/** A controller that runs until stopped, and takes `drainMs` to finish once stopped. */
function member(name: string, drainMs = 0, fails = false) {
  const seen = { aborted: false };
  const m: GroupMember = {
    name,
    async run(stop, abort) {
      if (fails) throw new Error("broken machinery");
      await new Promise<void>((resolve) => stop.addEventListener("abort", () => resolve()));
      await sleep(drainMs, abort);
      seen.aborted = abort.aborted;
    },
  };
  return { m, seen };
}

function events() {
  const said: string[] = [];
  const pending: PendingEvents = {
    flush: () => Promise.resolve(void said.push("flush")),
    discard: () => void said.push("discard"),
  };
  return { pending, said };
}

Deno.test("a shutdown drains, flushes the Events, then says it no longer leads", async () => {
  const a = member("a", 5);
  const e = events();
  const changes: boolean[] = [];
  const group = new ControllerGroup([a.m], {
    events: e.pending,
    log: log("group-test"),
    onLeaderChange: (leading) => changes.push(leading),
  });
  group.start();
  expect(group.running).toBe(true);
  await group.stop("shutdown");
  expect({ running: group.running, aborted: a.seen.aborted, said: e.said, changes }).toEqual({
    running: false,
    aborted: false,
    said: ["flush"],
    changes: [true, false],
  });
});

Deno.test("lost: reconciles cancelled at once and pending Events dropped", async () => {
  const a = member("a", 60_000);
  const e = events();
  const group = new ControllerGroup([a.m], { events: e.pending, log: log("group-test") });
  group.start();
  await group.stop("lost");
  expect({ aborted: a.seen.aborted, said: e.said }).toEqual({ aborted: true, said: ["discard"] });
});

Deno.test("a drain past the grace period cancels; a broken controller stops no other", async () => {
  const slow = member("slow", 60_000);
  const broken = member("broken", 0, true);
  const e = events();
  const group = new ControllerGroup([slow.m, broken.m], {
    events: e.pending,
    log: log("group-test"),
    gracefulShutdownMs: 10,
  });
  group.start();
  await sleep(1);
  expect(group.running).toBe(true);
  await group.stop("handover");
  expect({ aborted: slow.seen.aborted, said: e.said }).toEqual({ aborted: true, said: [] });
  // Stopping what is not running is nothing.
  await group.stop("shutdown");
});
