/**
 * Leader election on a `coordination.k8s.io/v1` Lease, safe when a process freezes, a clock jumps
 * or stands still, a connection dies in silence, or the API server answers slowly.
 *
 * Each role reads the clock that can only make it wait too long, never too little:
 *
 * - A standby takes a lease held by another only after it has seen the lease record unchanged for
 *   its duration D, counted on its own *monotonic* clock from the moment it received the record in
 *   which it last saw a change (client-go's rule; Go's time values carry a monotonic reading, so
 *   client-go does the same). Remote timestamps are never compared with a local clock, and the
 *   standby's wall clock plays no part: stepped forward an hour it would otherwise take a healthy
 *   leader's lease at once. A monotonic clock that stood still (the standby's machine suspended)
 *   only makes it wait longer.
 * - The leader sends a write only while less than the renew deadline R (< D) has passed since it
 *   *sent* its last renewal that succeeded, counted as the larger of the monotonic and the wall
 *   clock's readings (util/clock.ts). That is never less than the time that really passed unless
 *   both clocks are wrong at once: a suspension stops the monotonic clock but not the wall clock,
 *   a wall clock stepped back leaves the monotonic one. A wall clock stepped forward only closes
 *   the fence early: the leader stops its work, renews its own lease (nobody else could take it)
 *   and starts again. The fence is checked right before every write request leaves (retries
 *   included), at the end of a turn of the event loop (kube/transport.ts), and a write not
 *   answered by R + (D − R)/2 is abandoned.
 *
 * Why two leaders never write at once. Let s be the instant the leader sent its last successful
 * renewal. That renewal changed the record, and a standby received the change at some r ≥ s, so
 * it cannot take over before r + D ≥ s + D (real time, up to its clock's rate error). The old
 * leader sends nothing after s + R, and abandons what it sent by s + R + (D − R)/2. A freeze of
 * any length (SIGSTOP, a VM pause, CPU starvation) only makes the leader's elapsed time larger, so
 * its fence is already shut when it resumes, before any timer or worker runs; it is a follower
 * until it has renewed again. Seeing another holder with a valid lease ends leadership at once.
 *
 * What is assumed: each machine's monotonic clock runs, while the process runs, at a rate within
 * a few per cent of real time (it must err by less than (D − R)/(2D), a sixth with the defaults);
 * at least one of the leader's two clocks counts the time that passes (not both standing still or
 * stepped back together); and a request reaches the API server within (D − R)/2 (2.5 s) of
 * leaving, or more precisely a write takes at most that much longer than the renewal before it
 * did. What remains: a request that passed the fence in the instant before the process froze goes
 * out when it resumes. Requests leave only when a turn of the event loop ends, so the window is
 * from the check to that end: the check is made in the turn's last phase, with only the other
 * writes checked at that moment after it, not in the middle of the turn's work. Only the API
 * server can refuse such a request: the leader fence deploy/ installs
 * (cli/manifests/leader_fence_policy.ts) refuses a write by any of the operator's pods but the
 * Lease's holder, which is why an identity begins with the pod's name (defaultIdentity). A write
 * whose object the new leader changed meanwhile meets a conflict (409) instead: the API server
 * checks a resourceVersion, and server-side apply its field owners, before validating admission.
 *
 * A slow API server is not a lost lease. The leader renews by writing the lease it last wrote,
 * without reading it first (client-go's fast path; a conflict falls back to reading it), and an
 * attempt may take until the renew deadline: with one round trip per renewal, answers up to about
 * R/2 late (5 s) keep the lease, and the connection health check (kube/connection_health.ts) keeps
 * the connection while answers arrive at all.
 *
 * The lease is watched, so a released lease is taken within milliseconds, and a crashed leader's
 * lease is taken D after its last renewal rather than up to a poll period later. Unlike client-go,
 * a lost lease does not end the process: work stops at once and the instance campaigns again; and
 * a clean shutdown releases the lease.
 *
 * A shard of a ring is a lease like this one (runtime/shards/): its elector campaigns only while
 * the ring wants it to (`want`), and hands the lease over when it stops wanting it, the way it
 * shuts down: the work drains while the lease is still renewed, then the lease is released. So
 * the same argument keeps any two holders of one shard from writing at once.
 */
import type { KubeClient } from "../../kube/client.ts";
import type { KubeObject } from "../../kube/object.ts";
import { isApiError } from "../../kube/errors.ts";
import { LEASE } from "../../kube/kinds.ts";
import { NotLeaderError } from "../../kube/write_fence.ts";
import { type Clock, Instant, systemClock } from "../../util/clock.ts";
import { sleep } from "../../util/sleep.ts";
import { instantSpan } from "../../util/tracer.ts";
import { causeOf, type Gauge, type Logger, WarningThrottle } from "../observe/mod.ts";
import { failAtStartup } from "./lease_startup.ts";
import { microTime, releaseLease, watchLease } from "./lease_watch.ts";
import { type Lease, type LeaseSpec, LeaseView } from "./lease_view.ts";

/** Which Lease to elect a leader on, who this instance is, and the timings (client-go's). */
export interface LeaderElectionOptions {
  /** The Lease's namespace (the operator's own). */
  namespace: string;
  /** The Lease's name; every replica of one operator names the same. */
  name: string;
  /** Unique per instance; default `<pod or hostname>_<random>` (see defaultIdentity). */
  identity: string;
  /**
   * How long others wait, after they last saw the lease change, before taking it; default 15 s.
   * A crashed leader's work resumes elsewhere after this long; too short, and a slow API server
   * costs the lease.
   */
  leaseDurationMs?: number;
  /**
   * How long after its last successful renewal the leader stops all writes and work, whether or
   * not it could renew meanwhile; default 10 s. Must leave room below the lease duration: half the
   * difference is how long a write in flight may still take.
   */
  renewDeadlineMs?: number;
  /** Pause between renewals, and between a follower's looks at the lease; default 2 s. */
  retryPeriodMs?: number;
  /** Where lost leases, failed renewals and changes of leader are told. */
  log: Logger;
  /** `leader_election_master_status{name}`. */
  gauge?: Gauge;
  /** Where time comes from; the system's by default (tests jump one clock or the other). */
  clock?: Clock;
  /**
   * Watch the lease (default true). False when someone else watches it and hands each version
   * it sees to `saw` at once (a ring watches all its leases in one watch).
   */
  watch?: boolean;
  /** Labels and annotations this elector puts on the lease when it creates or writes it. */
  labels?: Record<string, string>;
  /** Annotations this elector puts on the lease when it creates or writes it. */
  annotations?: Record<string, string>;
}

/**
 * Why leadership ended: the lease was lost (stop at once), the process shuts down, or the lease is
 * handed over because it is no longer wanted (`want(false)`; drain, then it is released).
 */
export type StopReason = "lost" | "shutdown" | "handover";

/** What a leader does: start its work when it wins the lease, and stop it when it ends. */
export interface LeaderCallbacks {
  /** Start the work that only a leader may do. */
  onStartedLeading(): void;
  /**
   * Stop that work. On "lost", stop at once (writes are already refused); on "shutdown" or
   * "handover", drain (the lease is still renewed until this resolves, then released).
   */
  onStoppedLeading(reason: StopReason): Promise<void>;
}

/** The two durations the leader's fence is counted with, in milliseconds. */
export interface LeaseTiming {
  /** How long others wait after the lease last changed before taking it. */
  leaseDurationMs: number;
  /** How long after its last successful renewal the leader stops writing. */
  renewDeadlineMs: number;
}

/**
 * The leader's fence: how many milliseconds a write sent now may take before it must be
 * abandoned, or undefined when no write may be sent, for a last successful renewal sent at
 * `renewed` (conservative: the larger of both clocks' elapsed time; see the module doc).
 */
export function writeBudgetMs(
  renewed: Instant | undefined,
  timing: LeaseTiming,
): number | undefined {
  const { renewDeadlineMs, leaseDurationMs } = timing;
  const elapsed = renewed?.elapsedMs() ?? Infinity;
  if (!(elapsed < renewDeadlineMs)) return undefined;
  return renewDeadlineMs - elapsed + (leaseDurationMs - renewDeadlineMs) / 2;
}

type Attempt = "acquired" | "held" | "failed";

/**
 * Campaigns for a Lease and keeps it, the client-go way, with the write fence shut whenever
 * leadership is in doubt (see the module doc).
 */
export class LeaderElector {
  readonly #client: KubeClient;
  readonly #options:
    & Required<Omit<LeaderElectionOptions, "gauge" | "labels" | "annotations">>
    & Pick<LeaderElectionOptions, "gauge" | "labels" | "annotations">;
  readonly #clock: Clock;
  readonly #warnings: WarningThrottle;
  /** What it has seen of the Lease. */
  readonly #view: LeaseView;
  /** Just before the request behind our latest successful acquire or renewal was sent. */
  #renewed?: Instant;
  #leading = false;
  #wake?: () => void;
  /** Until the lease was first read, a refusal or a missing namespace is fatal, not retried. */
  #everRead = false;
  /** Whether to campaign for (and keep) the lease; see `want`. */
  #wanted = true;
  /** Resolves the running lead's hand-over, when it is no longer wanted. */
  #handOver?: () => void;

  /** Refuses timings that break lease duration > renew deadline > 1.2 × retry period. */
  constructor(client: KubeClient, options: LeaderElectionOptions) {
    this.#client = client;
    this.#options = {
      ...options,
      leaseDurationMs: options.leaseDurationMs ?? 15_000,
      renewDeadlineMs: options.renewDeadlineMs ?? 10_000,
      retryPeriodMs: options.retryPeriodMs ?? 2_000,
      clock: options.clock ?? systemClock,
      watch: options.watch ?? true,
    };
    this.#clock = this.#options.clock;
    this.#view = new LeaseView(this.#clock);
    const { leaseDurationMs, renewDeadlineMs, retryPeriodMs } = this.#options;
    if (!(leaseDurationMs > renewDeadlineMs && renewDeadlineMs > retryPeriodMs * 1.2)) {
      throw new RangeError(
        `leader election needs lease duration (${leaseDurationMs} ms) > renew deadline ` +
          `(${renewDeadlineMs} ms) > 1.2 × retry period (${retryPeriodMs} ms)`,
      );
    }
    this.#warnings = new WarningThrottle(options.log);
    this.#options.gauge?.set({ name: options.name }, 0);
  }

  /** The lease's name. */
  get name(): string {
    return this.#options.name;
  }

  /**
   * Whether to hold the lease: while false the elector does not campaign, and when it leads it
   * hands the lease over (the work drains, then the lease is released); true campaigns again.
   * Default true.
   */
  want(wanted: boolean): void {
    if (this.#wanted === wanted) return;
    this.#wanted = wanted;
    if (wanted) this.#wake?.();
    else this.#handOver?.();
  }

  /**
   * A version of the lease someone else's watch received just now (undefined: it was deleted),
   * for an elector that does not watch it itself.
   */
  saw(lease: KubeObject | undefined): void {
    this.#view.observe(lease, Instant.now(this.#clock));
    this.#wake?.();
  }

  /**
   * Who holds the lease by the last record seen, if anyone whose lease has not run out by our
   * clock (the rule a standby takes it by): this instance while it leads.
   */
  holder(): string | undefined {
    if (this.isLeader) return this.#options.identity;
    const holder = this.#view.holderIdentity;
    return holder && this.#view.expiresInMs() > 0 ? holder : undefined;
  }

  /** The annotations of the lease as last seen (a ring records its size there). */
  get annotations(): Record<string, string> {
    return this.#view.latest?.metadata?.annotations ?? {};
  }

  /** True while this instance leads and its last renewal is within the renew deadline. */
  get isLeader(): boolean {
    return this.#leading && writeBudgetMs(this.#renewed, this.#options) !== undefined;
  }

  /**
   * The write fence: throws NotLeaderError unless this instance surely leads right now, else
   * returns how many milliseconds a write sent now may take before it must be abandoned.
   */
  readonly fence = (): number => {
    const budget = this.#leading ? writeBudgetMs(this.#renewed, this.#options) : undefined;
    if (budget === undefined) {
      // A pause can outlast the deadline before any timer had a chance to run: wake the loop.
      if (this.#leading) this.#wake?.();
      throw new NotLeaderError(`not the leader of lease ${this.#options.name}; write refused`);
    }
    return budget;
  };

  /** Campaigns, leads, and campaigns again after a loss, until `signal` aborts. */
  async run(signal: AbortSignal, callbacks: LeaderCallbacks): Promise<void> {
    const { log, identity, name } = this.#options;
    const watcher = new AbortController();
    const watching = this.#options.watch
      ? watchLease(this.#client, this.#options, {
        view: this.#view,
        clock: this.#clock,
        seen: () => this.#wake?.(),
        signal: watcher.signal,
      })
      : Promise.resolve();
    try {
      while (!signal.aborted) {
        log.info("campaigning for lease {lease} as {identity}", { lease: name, identity });
        if (!(await this.#acquire(signal))) break;
        this.#setLeading(true);
        log.info("became leader of lease {lease}", { lease: name });
        instantSpan("leader election: became leader", { lease: name, identity });
        callbacks.onStartedLeading();

        const renewStop = new AbortController();
        const renewing = this.#renewLoop(renewStop.signal);
        const shutdown = new Promise<"shutdown">((resolve) => {
          if (signal.aborted) resolve("shutdown");
          signal.addEventListener("abort", () => resolve("shutdown"), { once: true });
        });
        const handover = new Promise<"handover">((resolve) => {
          this.#handOver = () => resolve("handover");
          if (!this.#wanted) resolve("handover");
        });
        const first = await Promise.race([renewing, shutdown, handover]);
        this.#handOver = undefined;
        if (first === "lost") {
          this.#setLeading(false);
          log.error("lost lease {lease}; stopped all work, campaigning again", { lease: name });
          instantSpan("leader election: lost the lease", { lease: name, identity });
          await callbacks.onStoppedLeading("lost");
          continue;
        }
        // Shutting down or handing over: keep renewing while the work drains, so nobody else
        // starts meanwhile.
        if (first === "handover") log.info("handing lease {lease} over", { lease: name });
        const lostDuringDrain = renewing.then((end) => {
          if (end !== "lost") return;
          this.#setLeading(false);
          return callbacks.onStoppedLeading("lost");
        });
        // ("stopped" cannot come first: the renewals stop only below.)
        await callbacks.onStoppedLeading(first === "handover" ? "handover" : "shutdown");
        renewStop.abort();
        const end = await renewing;
        await lostDuringDrain;
        const stillLeader = this.isLeader;
        this.#setLeading(false);
        if (end === "stopped" && stillLeader) {
          await releaseLease(this.#client, this.#options, this.#clock);
        }
      }
    } finally {
      this.#handOver = undefined;
      this.#setLeading(false);
      watcher.abort();
      await watching;
      this.#warnings.flush();
    }
  }

  #setLeading(leading: boolean): void {
    this.#leading = leading;
    this.#options.gauge?.set({ name: this.#options.name }, leading ? 1 : 0);
  }

  /** Waits for `ms`, or less when the lease record changes (the watch wakes us). */
  async #nap(ms: number, signal: AbortSignal): Promise<void> {
    const woken = new AbortController();
    this.#wake = () => woken.abort();
    try {
      await sleep(ms, AbortSignal.any([signal, woken.signal]));
    } finally {
      this.#wake = undefined;
    }
  }

  /** Until we hold the lease (true) or `signal` aborts (false); throws StartupError if it never can. */
  async #acquire(signal: AbortSignal): Promise<boolean> {
    const { retryPeriodMs } = this.#options;
    let nextLook = 0;
    while (!signal.aborted) {
      if (!this.#wanted) {
        // Not to be had now: wait until wanted again (`want` wakes us).
        await this.#nap(retryPeriodMs, signal);
        continue;
      }
      if (this.#clock.monotonicMs() >= nextLook || this.#view.looksFree(this.#options.identity)) {
        const result = await this.#attempt(signal, this.#options.renewDeadlineMs, false);
        if (result === "acquired") return true;
        nextLook = this.#clock.monotonicMs() + retryPeriodMs * (1 + 0.2 * Math.random());
      }
      // Look again at the next poll, or the moment the holder's lease runs out, or when the
      // watch shows a change, whichever comes first.
      const untilLook = nextLook - this.#clock.monotonicMs();
      await this.#nap(Math.max(0, Math.min(untilLook, this.#view.expiresInMs())), signal);
    }
    return false;
  }

  /** Renews every retry period until `stop` aborts ("stopped") or the lease is lost ("lost"). */
  async #renewLoop(stop: AbortSignal): Promise<"lost" | "stopped"> {
    const { retryPeriodMs, renewDeadlineMs } = this.#options;
    let lastAttempt = this.#renewed!;
    while (!stop.aborted) {
      const remaining = renewDeadlineMs - this.#renewed!.elapsedMs();
      if (remaining <= 0) return "lost";
      if (this.#view.heldByAnother(this.#options.identity)) return "lost";
      const untilNext = retryPeriodMs - lastAttempt.elapsedMs();
      if (untilNext > 0) {
        await this.#nap(Math.min(untilNext, remaining), stop);
        continue;
      }
      lastAttempt = Instant.now(this.#clock);
      // The attempt may take until the deadline: a slow answer is not a lost lease. A dead
      // connection is replaced well before (kube/connection_health.ts), failing the attempt, and
      // the next one goes out at once on the new connection.
      const result = await this.#attempt(stop, remaining, true);
      if (result === "held") return "lost";
    }
    return "stopped";
  }

  /**
   * One look at the lease, taking or renewing it when it is free or ours, within `timeoutMs`.
   * `renewing`: we lead, and first try to write the lease we last saw without reading it.
   */
  async #attempt(signal: AbortSignal, timeoutMs: number, renewing: boolean): Promise<Attempt> {
    const { namespace, name, identity, leaseDurationMs } = this.#options;
    const until = this.#clock.monotonicMs() + timeoutMs;
    const left = () => Math.max(1, until - this.#clock.monotonicMs());
    const spec = (current: LeaseSpec): LeaseSpec => {
      const now = this.#clock.wallMs();
      return {
        holderIdentity: identity,
        leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
        acquireTime: current.holderIdentity === identity && current.acquireTime
          ? current.acquireTime
          : microTime(now),
        renewTime: microTime(now),
        leaseTransitions: (current.leaseTransitions ?? 0) +
          (current.holderIdentity === identity ? 0 : 1),
      };
    };
    /** Writes our record over `lease` (a compare-and-swap on its resourceVersion). */
    const write = async (lease: Lease): Promise<Attempt> => {
      const sent = Instant.now(this.#clock);
      const { labels, annotations } = this.#options;
      const meta = lease.metadata ?? {};
      const updated = await this.#client.update(LEASE, {
        ...lease,
        // A lease taken over says what its new holder says of it (a ring's size), not its old one.
        metadata: {
          ...meta,
          ...(labels ? { labels: { ...meta.labels, ...labels } } : {}),
          ...(annotations ? { annotations: { ...meta.annotations, ...annotations } } : {}),
        },
        spec: spec(lease.spec ?? {}),
      }, { signal, timeoutMs: left() });
      this.#renewed = sent;
      this.#view.observe(updated, sent);
      return "acquired";
    };
    try {
      const latest = this.#view.latest;
      if (renewing && latest?.spec?.holderIdentity === identity) {
        try {
          return await write(latest);
        } catch (error) {
          // Changed since we last saw it: read it and decide as anyone would.
          if (!isApiError(error, 409)) throw error;
        }
      }
      let lease: Lease | undefined;
      try {
        lease = await this.#client.get(LEASE, name, {
          namespace,
          signal,
          timeoutMs: left(),
        });
      } catch (error) {
        if (!isApiError(error, 404)) throw error;
      }
      if (!lease) {
        const sent = Instant.now(this.#clock);
        const { labels, annotations } = this.#options;
        const created = await this.#client.create(LEASE, {
          metadata: { name, namespace, labels, annotations },
          spec: { ...spec({}), leaseTransitions: 0 },
        }, { signal, timeoutMs: left() });
        this.#renewed = sent;
        this.#everRead = true;
        this.#view.observe(created, sent);
        return "acquired";
      }
      // Observed now, after the answer arrived: the later instant is the safe one for a follower.
      this.#everRead = true;
      this.#view.observe(lease, Instant.now(this.#clock));
      if (this.#view.heldByAnother(this.#options.identity)) return "held";
      return await write(lease);
    } catch (error) {
      if (signal.aborted) return "failed";
      if (!this.#everRead) failAtStartup(error, this.#options);
      // A conflict means the record changed since we read it; the next look tells by whom.
      if (!isApiError(error, 409)) {
        this.#warnings.warn(causeOf(error), "lease {lease}: {error}", {
          lease: name,
          error: (error as Error).message,
        });
      }
      return "failed";
    }
  }
}
