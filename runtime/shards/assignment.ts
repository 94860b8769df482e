/**
 * Which replica each shard of a ring should have, from what every replica sees: the live members
 * and who holds each shard now. A pure function, so replicas that see the same computes the same;
 * replicas that see differently for a moment only move a shard once more than needed, never hand
 * it to two (each move goes through the shard's lease).
 *
 * Balanced: loads differ by at most one. Sticky: a holder keeps its shards up to its quota, and
 * the members holding most get the larger quotas, so scaling out moves only what the newcomer
 * takes (⌊N/M⌋ shards) and a member that leaves moves only its own. Free shards go by rendezvous
 * hashing (the highest `fnv1a64(identity/shard)` among members with room), so who gets what does
 * not depend on the order members appeared in.
 */
import { fnv1a64Hex } from "../../kube/shard_range.ts";

/** What a replica sees of its ring. */
export interface RingView {
  /** How many shards the ring has. */
  count: number;
  /** The identities of the live members (the replica itself included). */
  members: readonly string[];
  /** Who holds each shard now, by index, if anyone whose lease has not run out. */
  holders: readonly (string | undefined)[];
}

/** The member each shard should have, by index (undefined: there are no members). */
export function assignShards(view: RingView): (string | undefined)[] {
  const members = [...new Set(view.members)].sort();
  const owners: (string | undefined)[] = new Array(view.count).fill(undefined);
  if (!members.length) return owners;
  const live = new Set(members);
  const held = new Map(members.map((m) => [m, 0]));
  for (const holder of view.holders) {
    if (holder !== undefined && live.has(holder)) held.set(holder, held.get(holder)! + 1);
  }
  // The larger quotas go to those holding most (fewest moves), then by a hash of the identity.
  const base = Math.floor(view.count / members.length);
  const extra = view.count % members.length;
  const ranked = [...members].sort((a, b) =>
    held.get(b)! - held.get(a)! || compare(fnv1a64Hex(a), fnv1a64Hex(b)) || compare(a, b)
  );
  const room = new Map(ranked.map((m, i) => [m, base + (i < extra ? 1 : 0)]));
  // A holder keeps its shards, in index order, up to its quota.
  for (let shard = 0; shard < view.count; shard++) {
    const holder = view.holders[shard];
    if (holder !== undefined && (room.get(holder) ?? 0) > 0) {
      owners[shard] = holder;
      room.set(holder, room.get(holder)! - 1);
    }
  }
  // The rest to the member with room that scores highest for the shard.
  for (let shard = 0; shard < view.count; shard++) {
    if (owners[shard] !== undefined) continue;
    let best: string | undefined;
    let bestScore = "";
    for (const member of members) {
      if (!room.get(member)) continue;
      const score = fnv1a64Hex(`${member}/${shard}`);
      if (best === undefined || score > bestScore) [best, bestScore] = [member, score];
    }
    owners[shard] = best;
    room.set(best!, room.get(best!)! - 1);
  }
  return owners;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
