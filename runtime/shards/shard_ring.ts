/**
 * A ring of shards: the replicas split the keys of every plugin by a stable hash of the parent's
 * uid (kube/shard_range.ts), and each shard is a Lease held exactly like the leader's
 * (runtime/leader/leader_election.ts): a replica writes for a shard only within its renew deadline
 * of that shard's lease, and stops that shard's work at once when it sees another holder. So the
 * argument that two leaders never write at once holds per shard.
 *
 * Who should hold what: every replica holds a member Lease of its own (renewed like the others,
 * so a replica holding no shard is still seen), watches the ring's Leases (one watch), and
 * computes the same balanced, sticky assignment from what it sees (assignment.ts). It campaigns
 * for the shards assigned to it and hands over those that are not:
 *
 * - Taking a shard: its lease is acquired (only when free, or when its holder's lease has run out
 *   by our monotonic clock), then its caches list (`ShardWork.start`); its keys are claimed only
 *   once they are current (the controller waits for them).
 * - Handing a shard over (drain first): new claims are refused, the reconciles in flight finish
 *   (or are cancelled after `drainMs`) while the lease is still renewed, its caches are dropped,
 *   and only then is the lease released; the new owner, watching, takes it at once. So no key is
 *   reconciled by two replicas at the same time, and a clean shutdown hands every shard over at
 *   once.
 * - A replica that dies: its member and shard leases stop changing; after the lease duration the
 *   others count it out, and the new owners take its shards (within the lease duration of its last
 *   renewal, and the poll period when the watch is down).
 * - A lost shard lease (not renewed within its deadline, or another holder seen): claims refused
 *   and reconciles in flight cancelled at once, as a lost leader does; its writes are refused by
 *   the fence anyway. A child's write already handed to the HTTP client when the process froze,
 *   the API server refuses (cli/shard_fence_policy.ts): the lease names N and its shard, and the
 *   child its bucket, so the server can tell which holder may write it.
 *
 * The ring's size N decides which keys go where, so it is recorded on every lease: a replica that
 * sees a live lease of the ring with another N refuses to work (holds nothing) until that lease is
 * gone. Beside a ring of another size at work it waits as a standby does, ready: a Deployment's
 * rollout that changes N replaces the old replicas only once the new ones are ready, and the old
 * ones hand their shards to each other until the last leaves, when the new ring starts. Two sizes
 * with no ring at work (started together) are a dispute nobody settles: not ready.
 *
 * Cost: (N + replicas) lease renewals per retry period, one watch, and one write per shard that
 * moves.
 */
import type { KubeClient } from "../../kube/client.ts";
import { isApiError } from "../../kube/errors.ts";
import { LEASE } from "../../kube/kinds.ts";
import type { KubeObject } from "../../kube/object.ts";
import { scoped } from "../../kube/resource.ts";
import { fnv1a64Hex, MAX_SHARDS, shardOf, WHOLE_SPACE_SELECTOR } from "../../kube/shard_range.ts";
import { NotLeaderError, type WriteFence } from "../../kube/write_fence.ts";
import { type Clock, systemClock } from "../../util/clock.ts";
import { sleep, whenAborted } from "../../util/sleep.ts";
import { Informer } from "../cache/mod.ts";
import { LeaderElector, leaderGauge } from "../leader/mod.ts";
import type { Gauge, Logger, ProbeChecks, Registry } from "../observe/mod.ts";
import { assignShards } from "./assignment.ts";
import { type RingLeaseNames, RingLeases } from "./ring_leases.ts";
import { ringLabelValue, shardLeasePrefix } from "./shard_names.ts";
import { type ShardClaim, ShardSlot } from "./shard_slot.ts";

/** The names the ring writes on its leases (under the operator's domain). */
export interface RingNames {
  /** Label on every lease of the ring; its value names the ring. */
  ringLabel: string;
  /** Annotation holding N, the ring's size. */
  countAnnotation: string;
}

/** What a shard's work is, as the ring starts and stops it. */
export interface ShardWork {
  /** The shard's lease is held: start its caches (its keys are claimed once they are current). */
  start(shard: number): void;
  /** The shard is handed on (its reconciles have drained): stop and drop its caches. */
  stop(shard: number): Promise<void>;
}

export interface ShardRingOptions {
  /** Lease writes go before other waiting requests (`client.urgent()`). */
  client: KubeClient;
  namespace: string;
  /** The ring's name: its leases are `<name>-shard-<i>` and `<name>-member-<hash of identity>`. */
  name: string;
  /** This replica, unique in the ring. */
  identity: string;
  /** N, the ring's size, 1 to 256: the same on every replica. */
  count: number;
  names: RingNames;
  work: ShardWork;
  /** As for leader election (15 s, 10 s, 2 s by default), for every lease of the ring. */
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /**
   * How long a hand-over (or a shutdown) waits for a shard's reconciles in flight before it
   * cancels them; default 30 s. The lease is renewed meanwhile, so nobody else starts; too long
   * only delays the new owner.
   */
  drainMs?: number;
  log: Logger;
  registry?: Registry;
  clock?: Clock;
}

/** Replicas that split the keys by shards, each shard a Lease held like the leader's. */
export class ShardRing {
  readonly count: number;
  readonly #options: ShardRingOptions;
  readonly #timing: { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number };
  readonly #clock: Clock;
  readonly #shards: ShardSlot[];
  readonly #member: LeaderElector;
  readonly #leases: RingLeases;
  readonly #leaseNames: RingLeaseNames;
  readonly #held?: Gauge;
  readonly #members?: Gauge;
  readonly #serverGauge?: Gauge;
  #serverSelects = false;
  /**
   * Why this replica refuses to work, when it does (a ring of another size), and whether that ring
   * is at work (this replica waits for it to go, as a standby) or only disputes the size.
   */
  #mismatch?: { why: string; waiting: boolean };
  /** A member of another size left out while our ring works (said once). */
  #ignored?: string;
  /** Set once the first assignment was made. */
  #assigned = false;
  readonly #ringLabelValue: string;

  constructor(options: ShardRingOptions) {
    const { count } = options;
    if (!Number.isInteger(count) || count < 1 || count > MAX_SHARDS) {
      throw new RangeError(`a ring has 1 to ${MAX_SHARDS} shards, not ${count}`);
    }
    this.count = count;
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#timing = {
      leaseDurationMs: options.leaseDurationMs ?? 15_000,
      renewDeadlineMs: options.renewDeadlineMs ?? 10_000,
      retryPeriodMs: options.retryPeriodMs ?? 2_000,
    };
    const { name } = options;
    this.#ringLabelValue = ringLabelValue(name);
    const labels = { [options.names.ringLabel]: this.#ringLabelValue };
    const annotations = { [options.names.countAnnotation]: String(count) };
    const gauge = options.registry && leaderGauge(options.registry);
    const elector = (lease: string) =>
      new LeaderElector(options.client, {
        namespace: options.namespace,
        name: lease,
        identity: options.identity,
        ...this.#timing,
        log: options.log,
        gauge,
        clock: options.clock,
        watch: false,
        labels,
        annotations,
      });
    this.#member = elector(`${name}-member-${fnv1a64Hex(options.identity)}`);
    this.#leases = new RingLeases({
      countAnnotation: options.names.countAnnotation,
      clock: this.#clock,
    });
    this.#leaseNames = {
      memberPrefix: `${name}-member-`,
      shardPrefix: shardLeasePrefix(name),
      ownMember: this.#member.name,
    };
    this.#shards = Array.from({ length: count }, (_, index) => {
      const shard = new ShardSlot(index, elector(`${shardLeasePrefix(name)}${index}`));
      shard.elector.want(false);
      return shard;
    });
    if (options.registry) {
      this.#held = options.registry.gauge(
        "shard_held",
        "1 while this replica holds the shard's lease and reconciles its keys",
        ["ring", "shard"],
      );
      for (let i = 0; i < count; i++) this.#held.set({ ring: name, shard: String(i) }, 0);
      this.#members = options.registry.gauge(
        "shard_ring_members",
        "Replicas this replica sees in the ring",
        ["ring"],
      );
      this.#serverGauge = options.registry.gauge(
        "shard_server_selects",
        "1 when the API server honours shard selectors (KEP-5866); else caches filter alone",
        ["ring"],
      );
    }
  }

  /** True when the API server honours `shardSelector` (probed at start; false until then). */
  get serverSelects(): boolean {
    return this.#serverSelects;
  }

  /** The shards whose leases this replica holds now. */
  get held(): number[] {
    return this.#shards.filter((s) => s.elector.isLeader).map((s) => s.index);
  }

  /** The shard a parent's uid hashes to. */
  shardOf(uid: string): number {
    return shardOf(uid, this.count);
  }

  /**
   * The right to reconcile the object with `uid` now: its shard's lease is held, its hand-over has
   * not begun. Undefined when another replica's (or nobody's yet). Release it when done.
   */
  claim(uid: string): ShardClaim | undefined {
    return this.#shards[this.shardOf(uid)].claim();
  }

  /** Passes while this replica holds any shard (for writes about no one key: Events). */
  readonly anyFence: WriteFence = () => {
    for (const shard of this.#shards) {
      if (shard.elector.isLeader) return shard.elector.fence();
    }
    throw new NotLeaderError(`holds no shard of ring ${this.#options.name}; write refused`);
  };

  /**
   * `/readyz`: not ready until the ring was first looked at and the shards assigned, nor while
   * the ring's size is in dispute; ready, as a standby, while a ring of another size works; the
   * shards held are noted.
   */
  checks(shardFresh: (shard: number) => boolean): ProbeChecks {
    return {
      readyz: {
        shards: () => {
          const mismatch = this.#mismatch;
          if (mismatch) {
            return mismatch.waiting
              ? { note: `waits for it to go: ${mismatch.why}` }
              : mismatch.why;
          }
          if (!this.#assigned) return `looking at ring ${this.#options.name}`;
          const held = this.held;
          const listing = held.filter((s) => !shardFresh(s));
          if (listing.length) return `listing the caches of shard(s) ${listing.join(", ")}`;
          return {
            note: held.length
              ? `holds shard(s) ${held.join(", ")} of ${this.count}`
              : `holds none of ${this.count} shards`,
          };
        },
      },
    };
  }

  /**
   * Joins the ring and keeps to the assignment until `signal` aborts; then hands every shard over
   * (drained) and leaves. Throws a StartupError when the leases cannot be used at all.
   */
  async run(signal: AbortSignal): Promise<void> {
    const options = this.#options;
    const log = options.log;
    await this.#probe(signal);
    const leases = new Informer(
      options.client,
      scoped(LEASE, { labelSelector: `${options.names.ringLabel}=${this.#ringLabelValue}` }),
      { namespace: options.namespace, log },
    );
    leases.onChange((change) => this.#saw(change.object, change.type === "deleted"));
    const stopAll = new AbortController();
    const watching = leases.run(stopAll.signal);
    const member = this.#member.run(stopAll.signal, {
      onStartedLeading: () => {},
      onStoppedLeading: () => Promise.resolve(),
    });
    const shards = this.#shards.map((shard) =>
      shard.elector.run(signal, {
        onStartedLeading: () => this.#started(shard),
        onStoppedLeading: (reason) => this.#stopped(shard, reason),
      })
    );
    try {
      await Promise.race([leases.synced, whenAborted(signal)]);
      // Replicas started together see each other before anyone takes everything.
      await sleep(this.#timing.retryPeriodMs, signal);
      log.info("joined ring {ring} of {count} shard(s) as {identity}", {
        ring: options.name,
        count: this.count,
        identity: options.identity,
      });
      while (!signal.aborted) {
        this.#reassign();
        await sleep(this.#timing.retryPeriodMs / 2, signal);
      }
    } finally {
      // Shutdown: each held shard drains and is released by its elector's run.
      await Promise.all(shards);
      stopAll.abort();
      await member;
      await this.#leave();
      await watching;
      log.info("left ring {ring}", { ring: options.name });
    }
  }

  /** Asks the API server, once, whether it honours shard selectors: `shardInfo` says it did. */
  async #probe(signal: AbortSignal): Promise<void> {
    const { client, namespace, log, name } = this.#options;
    try {
      const page = await client.list(LEASE, {
        namespace,
        limit: 1,
        shardSelector: WHOLE_SPACE_SELECTOR,
        signal,
      });
      this.#serverSelects = Boolean((page.metadata as { shardInfo?: unknown }).shardInfo);
    } catch (error) {
      if (signal.aborted) return;
      log.warn("could not ask whether the API server shards lists ({error}); filtering alone", {
        error: (error as Error).message,
      });
    }
    this.#serverGauge?.set({ ring: name }, this.#serverSelects ? 1 : 0);
    log.info(
      this.#serverSelects
        ? "the API server honours shard selectors: each shard's parents are listed by uid range"
        : "the API server does not honour shard selectors (gate ShardedListAndWatch off, or " +
          "older than 1.36): caches keep their shards' objects themselves",
      {},
    );
  }

  /** A version of a ring lease, as the watch delivered it. */
  #saw(lease: KubeObject, deleted: boolean): void {
    const name = lease.metadata?.name ?? "";
    this.#leases.saw(lease, deleted);
    for (const shard of this.#shards) {
      if (shard.elector.name === name) shard.elector.saw(deleted ? undefined : lease);
    }
    if (name === this.#member.name) this.#member.saw(deleted ? undefined : lease);
    if (this.#assigned) this.#reassign();
  }

  /** Looks at the ring and campaigns for (or hands over) each shard accordingly. */
  #reassign(): void {
    const { name, identity, log } = this.#options;
    if (!this.#member.isLeader) return;
    const { members, mismatch, ignored } = this.#leases.membership(
      this.#leaseNames,
      identity,
      this.count,
    );
    if (ignored !== this.#ignored && ignored) {
      log.warn("left out of the ring, which keeps working: {why}", { why: ignored });
    }
    this.#ignored = ignored;
    this.#sweep();
    if (mismatch?.why !== this.#mismatch?.why) {
      if (mismatch?.waiting) {
        log.warn("waiting for a ring of another size to go: {why}", { why: mismatch.why });
      } else if (mismatch) log.error("refusing to work: {why}", { why: mismatch.why });
      else log.info("the ring's size is agreed again; working", {});
    }
    this.#mismatch = mismatch;
    this.#members?.set({ ring: name }, members.size);
    const holders = this.#shards.map((shard) => shard.elector.holder());
    const owners = mismatch ? [] : assignShards({
      count: this.count,
      members: [...members],
      holders,
    });
    for (const shard of this.#shards) shard.elector.want(owners[shard.index] === identity);
    this.#assigned = true;
  }

  #started(shard: ShardSlot): void {
    const { name, log, work } = this.#options;
    shard.serve();
    this.#held?.set({ ring: name, shard: String(shard.index) }, 1);
    log.info("took shard {shard} of ring {ring}", { shard: shard.index, ring: name });
    work.start(shard.index);
  }

  /**
   * Stops a shard's work: at once when lost; else new claims are refused, the claims in flight
   * drain (cancelled after `drainMs`), and its caches go, before the elector releases the lease.
   */
  async #stopped(shard: ShardSlot, reason: "lost" | "shutdown" | "handover"): Promise<void> {
    const { name, log, work } = this.#options;
    this.#held?.set({ ring: name, shard: String(shard.index) }, 0);
    await shard.drain(reason, this.#options.drainMs ?? 30_000, log);
    await work.stop(shard.index);
    log.info("{how} shard {shard} of ring {ring}", {
      how: reason === "lost" ? "lost" : "handing over",
      shard: shard.index,
      ring: name,
    });
  }

  /**
   * Deletes, once unchanged for ten lease durations, the member leases of replicas that crashed (a
   * clean shutdown deletes its own) and the shard leases past our size, left by a larger ring: the
   * API server's shard fence (cli/shard_fence_policy.ts) reads every lease of the ring, and one
   * left held by a crashed replica would refuse our writes to the children of its old shard for
   * ever. Any replica may; the uid makes it a no-op for a lease made anew.
   */
  #sweep(): void {
    const { client, namespace, log } = this.#options;
    const stale = this.#leases.takeStale(
      this.#leaseNames,
      this.count,
      this.#timing.leaseDurationMs,
    );
    for (const { name, uid, what } of stale) {
      client.delete(LEASE, name, { namespace, uid, timeoutMs: 5_000 }).then(
        () => log.info("deleted {what} lease {lease}, unchanged for long", { what, lease: name }),
        (error) => {
          if (!isApiError(error, 404) && !isApiError(error, 409)) {
            log.debug("could not delete {what} lease {lease}: {error}", {
              what,
              lease: name,
              error,
            });
          }
        },
      );
    }
  }

  /** The member lease goes with a clean shutdown, so the others count this replica out at once. */
  async #leave(): Promise<void> {
    const { client, namespace, log } = this.#options;
    const name = this.#member.name;
    try {
      const lease = await client.get(LEASE, name, { namespace, timeoutMs: 5_000 });
      if (lease.spec?.holderIdentity && lease.spec.holderIdentity !== this.#options.identity) {
        return;
      }
      await client.delete(LEASE, name, { namespace, uid: lease.metadata?.uid, timeoutMs: 5_000 });
    } catch (error) {
      if (isApiError(error, 404)) return;
      log.warn("could not delete member lease {lease}: {error}", {
        lease: name,
        error: (error as Error).message,
      });
    }
  }
}
