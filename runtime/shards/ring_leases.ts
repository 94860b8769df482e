/**
 * The ring's Leases as this replica last saw them, and what they say: who is a member, whether a
 * ring of another size is at work, and which leases were left behind long enough to sweep.
 */
import type { KubeObject } from "../../kube/object.ts";
import type { Clock } from "../../util/clock.ts";
import { leaseExpiresInMs } from "../leader/mod.ts";

/** A lease of the ring as last seen, and when (by our monotonic clock) its record last changed. */
export interface SeenLease {
  uid?: string;
  holder?: string;
  durationMs: number;
  /** The ring size N written on it, when it carries one. */
  count?: number;
  record: string;
  changedAt: number;
}

/** Why this replica refuses to work, and whether it waits (ready) for a ring at work to go. */
export interface RingMismatch {
  why: string;
  waiting: boolean;
}

/** Who is in the ring, as its leases say. */
export interface Membership {
  /** The identities of live members of our size, ours included. */
  members: Set<string>;
  /** Set when a ring of another size stops this replica. */
  mismatch?: RingMismatch;
  /** A live member of another size left out while our ring works. */
  ignored?: string;
}

/** What a ring names its leases, to tell members from shards. */
export interface RingLeaseNames {
  /** `<ring>-member-`. */
  memberPrefix: string;
  /** `<ring>-shard-`. */
  shardPrefix: string;
  /** This replica's own member lease. */
  ownMember: string;
}

/** A lease to delete: unchanged for long, and nobody's to renew. */
export interface StaleLease {
  name: string;
  uid?: string;
  what: "member" | "shard";
}

/** The ring's Leases as seen, read on one monotonic clock. */
export class RingLeases {
  readonly #seen = new Map<string, SeenLease>();

  constructor(
    private readonly options: { countAnnotation: string; clock: Clock },
  ) {}

  /** Records a version of a lease as the watch delivered it. */
  saw(lease: KubeObject, deleted: boolean): void {
    const name = lease.metadata?.name ?? "";
    if (deleted) {
      this.#seen.delete(name);
      return;
    }
    const spec = (lease as { spec?: { holderIdentity?: string; leaseDurationSeconds?: number } })
      .spec;
    const record = JSON.stringify(spec ?? {});
    const old = this.#seen.get(name);
    const count = Number(lease.metadata?.annotations?.[this.options.countAnnotation]);
    this.#seen.set(name, {
      uid: lease.metadata?.uid,
      holder: spec?.holderIdentity || undefined,
      durationMs: (spec?.leaseDurationSeconds ?? 0) * 1000,
      count: Number.isInteger(count) ? count : undefined,
      record,
      changedAt: old?.record === record ? old.changedAt : this.options.clock.monotonicMs(),
    });
  }

  /** The holder of a lease seen, while its lease has not run out by our clock. */
  liveHolder(name: string): string | undefined {
    const seen = this.#seen.get(name);
    if (!seen?.holder) return undefined;
    return leaseExpiresInMs(seen.changedAt, seen.durationMs, this.options.clock) > 0
      ? seen.holder
      : undefined;
  }

  /**
   * Who is in a ring of `count` shards. A ring of another size: its shard Leases stop us at once,
   * as their keys are cut otherwise. Its members alone stop us only while no shard of our size is
   * held (two sizes started together stop both); beside a ring at work they are left out, so that
   * a replica started with the wrong --shards stops itself, not the ring it joins (and a rollout
   * that changes the size waits, ready, for the old replicas' Leases to go).
   */
  membership(names: RingLeaseNames, identity: string, count: number): Membership {
    const members = new Set<string>([identity]);
    let foreignShard: string | undefined;
    let foreignMember: string | undefined;
    let ringAtWork = false;
    for (const [lease, seen] of this.#seen) {
      const holder = this.liveHolder(lease);
      if (!holder) continue;
      const member = lease.startsWith(names.memberPrefix);
      if (seen.count !== undefined && seen.count !== count) {
        const why = `lease ${lease} (held by ${holder}) belongs to a ring of ${seen.count} ` +
          `shards, this replica was started with ${count}: run every replica with the ` +
          `same --shards (to change it, stop the replicas of the old size; the new ones take ` +
          `over once their Leases are released or run out)`;
        if (member) foreignMember ??= why;
        else foreignShard ??= why;
      } else if (member) members.add(holder);
      else ringAtWork = true;
    }
    const mismatch = foreignShard
      ? { why: foreignShard, waiting: true }
      : foreignMember && !ringAtWork
      ? { why: foreignMember, waiting: false }
      : undefined;
    return { members, mismatch, ignored: mismatch ? undefined : foreignMember };
  }

  /**
   * Takes out, once unchanged for ten lease durations (at least `leaseDurationMs` each), the
   * member leases of replicas that crashed (a clean shutdown deletes its own) and the shard leases
   * past our size, left by a larger ring: the caller deletes them.
   */
  takeStale(names: RingLeaseNames, count: number, leaseDurationMs: number): StaleLease[] {
    const now = this.options.clock.monotonicMs();
    const { memberPrefix, shardPrefix, ownMember } = names;
    const pastOurSize = (lease: string) =>
      lease.startsWith(shardPrefix) && /^\d+$/.test(lease.slice(shardPrefix.length)) &&
      Number(lease.slice(shardPrefix.length)) >= count;
    const stale: StaleLease[] = [];
    for (const [name, seen] of this.#seen) {
      const member = name.startsWith(memberPrefix) && name !== ownMember;
      if (!member && !pastOurSize(name)) continue;
      if (now - seen.changedAt < 10 * Math.max(seen.durationMs, leaseDurationMs)) continue;
      this.#seen.delete(name);
      stale.push({ name, uid: seen.uid, what: member ? "member" : "shard" });
    }
    return stale;
  }
}
