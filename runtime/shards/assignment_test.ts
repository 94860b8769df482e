import { expect } from "expect";
import fc from "fast-check";
import { assignShards } from "./assignment.ts";

const loads = (owners: (string | undefined)[], members: string[]) =>
  members.map((m) => owners.filter((o) => o === m).length);

const identities = fc.uniqueArray(fc.stringMatching(/^[a-z0-9-]{1,12}$/), {
  minLength: 1,
  maxLength: 9,
});

Deno.test("every shard has a live member, and loads differ by at most one", () => {
  fc.assert(fc.property(identities, fc.integer({ min: 1, max: 40 }), (members, count) => {
    const owners = assignShards({ count, members, holders: [] });
    expect(owners.every((o) => o !== undefined && members.includes(o))).toBe(true);
    const load = loads(owners, members);
    expect(Math.max(...load) - Math.min(...load)).toBeLessThanOrEqual(1);
  }));
});

Deno.test("the same view gives the same answer, whatever the order members are listed in", () => {
  fc.assert(fc.property(identities, fc.integer({ min: 1, max: 20 }), (members, count) => {
    const holders = Array.from({ length: count }, (_, i) => members[(i * 7) % members.length]);
    const a = assignShards({ count, members, holders });
    const b = assignShards({ count, members: [...members].reverse(), holders });
    expect(a).toEqual(b);
  }));
});

Deno.test("a balanced ring stays as it is", () => {
  fc.assert(fc.property(identities, fc.integer({ min: 1, max: 30 }), (members, count) => {
    const first = assignShards({ count, members, holders: [] });
    expect(assignShards({ count, members, holders: first })).toEqual(first);
  }));
});

Deno.test("a new member takes ⌊N/M⌋ shards and nothing else moves", () => {
  fc.assert(fc.property(identities, fc.integer({ min: 1, max: 30 }), (members, count) => {
    if (members.length < 2) return;
    const [newcomer, ...old] = members;
    const before = assignShards({ count, members: old, holders: [] });
    const after = assignShards({ count, members, holders: before });
    const moved = after.filter((owner, shard) => owner !== before[shard]);
    expect(moved.every((owner) => owner === newcomer)).toBe(true);
    expect(moved.length).toBe(Math.floor(count / members.length));
    const load = loads(after, members);
    expect(Math.max(...load) - Math.min(...load)).toBeLessThanOrEqual(1);
  }));
});

Deno.test("a member that leaves moves only its own shards", () => {
  fc.assert(fc.property(identities, fc.integer({ min: 1, max: 30 }), (members, count) => {
    if (members.length < 2) return;
    const before = assignShards({ count, members, holders: [] });
    const [leaving, ...rest] = members;
    // Its leases run out: nobody holds its shards any more.
    const holders = before.map((owner) => owner === leaving ? undefined : owner);
    const after = assignShards({ count, members: rest, holders });
    for (let shard = 0; shard < count; shard++) {
      if (before[shard] !== leaving) expect(after[shard]).toBe(before[shard]);
    }
  }));
});

Deno.test("shards held by someone who is no member are given out; no members, no owners", () => {
  expect(assignShards({ count: 2, members: ["a"], holders: ["gone", "a"] })).toEqual(["a", "a"]);
  expect(assignShards({ count: 2, members: [], holders: ["a", "a"] })).toEqual([
    undefined,
    undefined,
  ]);
  // Three replicas that each grabbed what they could at start: one of them gives two back.
  const owners = assignShards({ count: 3, members: ["a", "b", "c"], holders: ["a", "a", "a"] });
  expect(owners[0]).toBe("a");
  expect(loads(owners, ["a", "b", "c"])).toEqual([1, 1, 1]);
});
