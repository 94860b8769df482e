import { expect } from "expect";
import { CacheFreshness } from "./cache_freshness.ts";

const settled = async (promise: Promise<void>) => {
  let done = false;
  promise.then(() => done = true);
  await new Promise((resolve) => setTimeout(resolve, 0));
  return done;
};

Deno.test("a cache not listed yet is behind until it catches up; one rightly empty is fresh", async () => {
  const listing = new CacheFreshness("not listed yet");
  expect(listing.behind?.reason).toBe("not listed yet");
  expect(await settled(listing.whenFresh())).toBe(false);
  listing.catchUp();
  expect(listing.behind).toBeUndefined();
  expect(await settled(listing.whenFresh())).toBe(true);
  const idle = new CacheFreshness();
  expect(idle.behind).toBeUndefined();
  expect(await settled(idle.whenFresh())).toBe(true);
});

Deno.test("each fall counts once, keeps its start and tells the latest reason", async () => {
  const freshness = new CacheFreshness();
  freshness.fallBehind("its watch failed: reset");
  const since = freshness.behind!.since;
  freshness.fallBehind("listing failed: refused");
  expect(freshness.epoch).toBe(1);
  expect(freshness.behind).toEqual({ since, reason: "listing failed: refused" });
  const waiting = freshness.whenFresh();
  expect(await settled(waiting)).toBe(false);
  freshness.catchUp();
  expect(await settled(waiting)).toBe(true);
  freshness.fallBehind("its watch went silent");
  expect(freshness.epoch).toBe(2);
});
