import { expect } from "expect";
import type { KubeObject } from "../../kube/object.ts";
import type { Clock } from "../../util/clock.ts";
import { type RingLeaseNames, RingLeases } from "./ring_leases.ts";

const names: RingLeaseNames = {
  memberPrefix: "r-member-",
  shardPrefix: "r-shard-",
  ownMember: "r-member-me",
};

function ring() {
  let now = 1_000;
  const clock: Clock = { monotonicMs: () => now, wallMs: () => now };
  const leases = new RingLeases({ countAnnotation: "x/shards", clock });
  const lease = (name: string, holder: string | undefined, count?: number, renewTime?: string) =>
    ({
      metadata: {
        name,
        uid: name,
        annotations: count === undefined ? {} : { "x/shards": String(count) },
      },
      spec: { holderIdentity: holder, leaseDurationSeconds: 15, renewTime },
    }) as KubeObject;
  return { leases, lease, run: (ms: number) => now += ms };
}

Deno.test("members of our size are counted while their leases live, by our clock", () => {
  const t = ring();
  t.leases.saw(t.lease("r-member-a", "a", 4), false);
  t.leases.saw(t.lease("r-member-b", "b", 4), false);
  expect([...t.leases.membership(names, "me", 4).members].sort()).toEqual(["a", "b", "me"]);
  t.run(10_000);
  t.leases.saw(t.lease("r-member-a", "a", 4, "2026-01-01T00:00:10.000000Z"), false); // renewed
  t.run(6_000);
  expect([...t.leases.membership(names, "me", 4).members].sort()).toEqual(["a", "me"]);
  t.leases.saw(t.lease("r-member-a", "a", 4), true);
  expect([...t.leases.membership(names, "me", 4).members]).toEqual(["me"]);
});

Deno.test("a live shard lease of another size stops us and waits; its members alone do not", () => {
  const t = ring();
  t.leases.saw(t.lease("r-member-old", "old", 2), false);
  const alone = t.leases.membership(names, "me", 4);
  expect(alone.mismatch?.waiting).toBe(false);
  expect(alone.mismatch?.why).toContain("same --shards");
  t.leases.saw(t.lease("r-shard-0", "x", 4), false);
  const beside = t.leases.membership(names, "me", 4);
  expect(beside.mismatch).toBeUndefined();
  expect(beside.ignored).toContain("ring of 2 shards");
  t.leases.saw(t.lease("r-shard-1", "old", 2), false);
  expect(t.leases.membership(names, "me", 4).mismatch?.waiting).toBe(true);
  // A released lease of another size stops nobody.
  t.leases.saw(t.lease("r-shard-1", undefined, 2), false);
  t.leases.saw(t.lease("r-member-old", undefined, 2), false);
  expect(t.leases.membership(names, "me", 4).mismatch).toBeUndefined();
});

Deno.test("stale: a crashed member and a shard past our size, after ten lease durations", () => {
  const t = ring();
  t.leases.saw(t.lease("r-member-me", "me", 4), false);
  t.leases.saw(t.lease("r-member-gone", "gone", 4), false);
  t.leases.saw(t.lease("r-shard-3", "me", 4), false);
  t.leases.saw(t.lease("r-shard-7", "gone", 8), false);
  t.leases.saw(t.lease("r-shard-x", "gone", 8), false);
  t.run(149_999);
  expect(t.leases.takeStale(names, 4, 15_000)).toEqual([]);
  t.run(1);
  expect(t.leases.takeStale(names, 4, 15_000)).toEqual([
    { name: "r-member-gone", uid: "r-member-gone", what: "member" },
    { name: "r-shard-7", uid: "r-shard-7", what: "shard" },
  ]);
  // Taken once: the caller deletes them.
  expect(t.leases.takeStale(names, 4, 15_000)).toEqual([]);
});

Deno.test("a lease seen again unchanged keeps its age; a changed one starts over", () => {
  const t = ring();
  t.leases.saw(t.lease("r-member-a", "a", 4), false);
  t.run(14_000);
  t.leases.saw(t.lease("r-member-a", "a", 4), false);
  t.run(1_000);
  expect(t.leases.liveHolder("r-member-a")).toBeUndefined();
  t.leases.saw(t.lease("r-member-a", "b", 4), false);
  expect(t.leases.liveHolder("r-member-a")).toBe("b");
});
