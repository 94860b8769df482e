import { expect } from "expect";
import type { LeaderElector } from "../leader/mod.ts";
import { log as logger } from "../observe/mod.ts";
import { ShardSlot } from "./shard_slot.ts";

function slot(leader = true) {
  const elector = { isLeader: leader, fence: () => 1_000 } as unknown as LeaderElector;
  return new ShardSlot(3, elector);
}
const log = logger("shard-slot-test");

Deno.test("claims only while serving and holding the lease", () => {
  expect(slot().claim()).toBeUndefined();
  const s = slot();
  s.serve();
  const claim = s.claim()!;
  expect(claim.shard).toBe(3);
  expect(claim.signal.aborted).toBe(false);
  expect(slot(false).claim()).toBeUndefined();
});

Deno.test("a hand-over waits for the claims in flight, then gives none", async () => {
  const s = slot();
  s.serve();
  const claim = s.claim()!;
  let drained = false;
  const draining = s.drain("handover", 60_000, log).then(() => drained = true);
  await Promise.resolve();
  expect(drained).toBe(false);
  expect(s.claim()).toBeUndefined();
  claim.release();
  claim.release(); // twice counts once
  await draining;
  expect(claim.signal.aborted).toBe(false);
});

Deno.test("a lost shard cancels its claims at once; a late drain cancels after drainMs", async () => {
  const lost = slot();
  lost.serve();
  const claim = lost.claim()!;
  const draining = lost.drain("lost", 10, log);
  expect(claim.signal.aborted).toBe(true);
  await draining;
  const late = slot();
  late.serve();
  const slow = late.claim()!;
  await late.drain("shutdown", 10, log);
  expect(slow.signal.aborted).toBe(true);
  late.serve();
  expect(late.claim()!.signal.aborted).toBe(false);
});
