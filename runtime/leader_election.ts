/**
 * Leader election on a `coordination.k8s.io/v1` Lease, safe when a process freezes, a clock
 * stands still or a connection dies in silence.
 *
 * The rule (client-go's): a lease held by another is valid until our *local* time of the last
 * change we saw to its record plus its `leaseDurationSeconds`. Remote timestamps are never
 * compared with our clock.
 *
 * Why two leaders never write at once. Let D be the lease duration and R the renew deadline
 * (R < D). The leader notes the instant just *before* it sends each renewal that succeeds; a write
 * is only sent while less than R has passed since the last such instant (the fence, checked
 * synchronously right before every write request leaves, retries included), and it is abandoned
 * if it has not completed by R + (D − R)/2. Another instance can take over only after seeing the
 * lease record unchanged for D on its own clock, counted from when it *received* the record, which
 * is after the renewal was sent. So the fence closes at least (D − R)/2 before anyone else may
 * start, whatever happened in between: a freeze of any length (SIGSTOP, a VM pause, CPU
 * starvation) only makes the elapsed time larger, so the fence is already shut when the process
 * resumes, before any timer or worker runs; the process then counts as a follower until it has
 * renewed again. Elapsed time is the larger of the monotonic and the wall clock's readings, so a
 * suspended machine whose monotonic clock stood still is caught too.
 *
 * What is assumed: clocks on the machines involved run at rates that differ by much less than
 * (D − R)/D (a third, with the defaults); a request takes less than (D − R)/2 from the moment it
 * leaves to the moment the server applies it (2.5 s by default). What remains: a request handed to
 * the network stack in the instant before the process froze goes out when it resumes; that is at
 * most one request per worker, and the window is the microseconds between the fence and the send.
 *
 * Seeing another holder with a valid lease ends leadership at once (not after the deadline). The
 * lease is watched, so a released lease is taken within milliseconds, and a crashed leader's lease
 * is taken D after its last renewal rather than up to a poll period later. Unlike client-go, a lost
 * lease does not end the process: work stops at once and the instance campaigns again; and a clean
 * shutdown releases the lease.
 */
import type { KubeClient, KubeObject } from "../kube/client.ts";
import { isApiError } from "../kube/errors.ts";
import { LEASE } from "../kube/kinds.ts";
import { missingRule, StartupError } from "../kube/preflight.ts";
import { Instant } from "../util/clock.ts";
import { sleep } from "../util/sleep.ts";
import { ReconnectBackoff } from "./backoff.ts";
import type { Logger } from "./logging.ts";
import type { Gauge } from "./metrics.ts";
import { causeOf, WarningThrottle } from "./warning_throttle.ts";

export interface LeaderElectionOptions {
  namespace: string;
  name: string;
  /** Unique per instance; default `<hostname>_<random>`. */
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
  log: Logger;
  /** `leader_election_master_status{name}`. */
  gauge?: Gauge;
}

/** Why leadership ended. */
export type StopReason = "lost" | "shutdown";

export interface LeaderCallbacks {
  /** Start the work that only a leader may do. */
  onStartedLeading(): void;
  /**
   * Stop that work. On "lost", stop at once (writes are already refused); on "shutdown", drain
   * (the lease is still renewed until this resolves, then released).
   */
  onStoppedLeading(reason: StopReason): Promise<void>;
}

/** A write refused because this instance is not (or no longer surely) the leader. */
export class NotLeaderError extends Error {
  override readonly name = "NotLeaderError";
}

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

type Lease = KubeObject & { spec?: LeaseSpec };

/** The lease record as last seen, and when (by our clocks) it last changed. */
interface Observation {
  record: string;
  spec: LeaseSpec;
  changedAt: Instant;
  resourceVersion?: string;
}

type Attempt = "acquired" | "held" | "failed";

/** RFC 3339 with microseconds, as `MicroTime` fields require. */
function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

export class LeaderElector {
  readonly #client: KubeClient;
  readonly #options: Required<Omit<LeaderElectionOptions, "gauge">> & { gauge?: Gauge };
  readonly #warnings: WarningThrottle;
  #observed?: Observation;
  /** Just before the request behind our latest successful acquire or renewal was sent. */
  #renewed?: Instant;
  #leading = false;
  #wake?: () => void;
  /** Until the lease was first read, a refusal or a missing namespace is fatal, not retried. */
  #everRead = false;

  constructor(client: KubeClient, options: LeaderElectionOptions) {
    this.#client = client;
    this.#options = {
      ...options,
      leaseDurationMs: options.leaseDurationMs ?? 15_000,
      renewDeadlineMs: options.renewDeadlineMs ?? 10_000,
      retryPeriodMs: options.retryPeriodMs ?? 2_000,
    };
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

  /** True while this instance leads and its last renewal is within the renew deadline. */
  get isLeader(): boolean {
    return this.#leading && this.#renewed !== undefined &&
      this.#renewed.elapsedMs() < this.#options.renewDeadlineMs;
  }

  /**
   * The write fence: throws NotLeaderError unless this instance surely leads right now, else
   * returns how many milliseconds a write sent now may take before it must be abandoned.
   */
  readonly fence = (): number => {
    const { renewDeadlineMs, leaseDurationMs } = this.#options;
    const elapsed = this.#renewed?.elapsedMs() ?? Infinity;
    if (!this.#leading || elapsed >= renewDeadlineMs) {
      // A pause can outlast the deadline before any timer had a chance to run: wake the loop.
      if (this.#leading) this.#wake?.();
      throw new NotLeaderError(`not the leader of lease ${this.#options.name}; write refused`);
    }
    return renewDeadlineMs - elapsed + (leaseDurationMs - renewDeadlineMs) / 2;
  };

  /** Campaigns, leads, and campaigns again after a loss, until `signal` aborts. */
  async run(signal: AbortSignal, callbacks: LeaderCallbacks): Promise<void> {
    const { log, identity, name } = this.#options;
    const watcher = new AbortController();
    const watching = this.#watchLease(watcher.signal);
    try {
      while (!signal.aborted) {
        log.info("campaigning for lease {lease} as {identity}", { lease: name, identity });
        if (!(await this.#acquire(signal))) break;
        this.#setLeading(true);
        log.info("became leader of lease {lease}", { lease: name });
        callbacks.onStartedLeading();

        const renewStop = new AbortController();
        const renewing = this.#renewLoop(renewStop.signal);
        const shutdown = new Promise<"shutdown">((resolve) => {
          if (signal.aborted) resolve("shutdown");
          signal.addEventListener("abort", () => resolve("shutdown"), { once: true });
        });
        const first = await Promise.race([renewing, shutdown]);
        if (first === "lost") {
          this.#setLeading(false);
          log.error("lost lease {lease}; stopped all work, campaigning again", { lease: name });
          await callbacks.onStoppedLeading("lost");
          continue;
        }
        // Shutting down: keep renewing while the work drains, so nobody else starts meanwhile.
        const lostDuringDrain = renewing.then((end) => {
          if (end !== "lost") return;
          this.#setLeading(false);
          return callbacks.onStoppedLeading("lost");
        });
        await callbacks.onStoppedLeading("shutdown");
        renewStop.abort();
        const end = await renewing;
        await lostDuringDrain;
        const stillLeader = this.isLeader;
        this.#setLeading(false);
        if (end === "stopped" && stillLeader) await this.#release();
      }
    } finally {
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
      if (performance.now() >= nextLook || this.#looksFree()) {
        const result = await this.#attempt(signal, 5_000);
        if (result === "acquired") return true;
        nextLook = performance.now() + retryPeriodMs * (1 + 0.2 * Math.random());
      }
      // Look again at the next poll, or the moment the holder's lease runs out, or when the
      // watch shows a change, whichever comes first.
      const untilLook = nextLook - performance.now();
      await this.#nap(Math.max(0, Math.min(untilLook, this.#expiresInMs())), signal);
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
      if (this.#heldByAnother()) return "lost";
      const untilNext = retryPeriodMs - lastAttempt.elapsedMs();
      if (untilNext > 0) {
        await this.#nap(Math.min(untilNext, remaining), stop);
        continue;
      }
      lastAttempt = Instant.now();
      // The attempt may not outlive the deadline; a silent connection is replaced when it passes.
      const result = await this.#attempt(stop, Math.min(remaining, retryPeriodMs * 2));
      if (result === "held") return "lost";
    }
    return "stopped";
  }

  /** True when the last record we saw names another holder whose lease has not run out. */
  #heldByAnother(): boolean {
    const holder = this.#observed?.spec.holderIdentity;
    return Boolean(holder) && holder !== this.#options.identity && this.#expiresInMs() > 0;
  }

  /** True when the last record we saw is free for us: no holder, us, or run out. */
  #looksFree(): boolean {
    return this.#observed !== undefined && !this.#heldByAnother();
  }

  /** Milliseconds until the observed holder's lease runs out by our clock (Infinity if none seen). */
  #expiresInMs(): number {
    const observed = this.#observed;
    if (!observed) return Infinity;
    const duration = (observed.spec.leaseDurationSeconds ?? 0) * 1000;
    return duration - observed.changedAt.elapsedMs();
  }

  /** One look at the lease, taking or renewing it when it is free or ours. */
  async #attempt(signal: AbortSignal, timeoutMs: number): Promise<Attempt> {
    const { namespace, name, identity, leaseDurationMs } = this.#options;
    const spec = (now: number, current: LeaseSpec): LeaseSpec => ({
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
      acquireTime: current.holderIdentity === identity && current.acquireTime
        ? current.acquireTime
        : microTime(now),
      renewTime: microTime(now),
      leaseTransitions: (current.leaseTransitions ?? 0) +
        (current.holderIdentity === identity ? 0 : 1),
    });
    try {
      let lease: Lease | undefined;
      try {
        lease = await this.#client.get<Lease>(LEASE, name, { namespace, signal, timeoutMs });
      } catch (error) {
        if (!isApiError(error, 404)) throw error;
      }
      if (!lease) {
        const sent = Instant.now();
        const created = await this.#client.create<Lease>(LEASE, {
          metadata: { name, namespace },
          spec: { ...spec(Date.now(), {}), leaseTransitions: 0 },
        }, { signal, timeoutMs });
        this.#renewed = sent;
        this.#everRead = true;
        this.#observe(created, sent);
        return "acquired";
      }
      // Observed now, after the answer arrived: the later instant is the safe one for a follower.
      this.#everRead = true;
      this.#observe(lease, Instant.now());
      if (this.#heldByAnother()) return "held";
      const sent = Instant.now();
      const updated = await this.#client.update<Lease>(LEASE, {
        ...lease,
        spec: spec(Date.now(), lease.spec ?? {}),
      }, { signal, timeoutMs });
      this.#renewed = sent;
      this.#observe(updated, sent);
      return "acquired";
    } catch (error) {
      if (signal.aborted) return "failed";
      if (!this.#everRead) this.#failStartup(error);
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

  /**
   * Throws a StartupError for what will not get better by retrying at start-up: no permission on
   * the lease, or no such namespace. (Later, the same is retried: RBAC may be mid-change.)
   */
  #failStartup(error: unknown): void {
    const { namespace, name } = this.#options;
    if (isApiError(error, 403)) {
      throw new StartupError(
        `${error.message}; leader election needs the Lease ${namespace}/${name}: ${
          missingRule(
            "coordination.k8s.io",
            "leases",
            ["get", "create", "update", "watch"],
            namespace,
          )
        }`,
      );
    }
    if (isApiError(error, 404) && error.details?.kind === "namespaces") {
      throw new StartupError(
        `the leader-election namespace "${namespace}" does not exist: create it (kubectl ` +
          `create namespace ${namespace}) or choose another with --leader-election-namespace`,
      );
    }
  }

  /** Remembers the record, and when (by our clocks) it last changed. */
  #observe(lease: Lease | undefined, at: Instant): void {
    const spec = lease?.spec ?? {};
    const record = JSON.stringify(spec);
    const resourceVersion = lease?.metadata?.resourceVersion;
    if (this.#observed?.record !== record) {
      this.#observed = { record, spec, changedAt: at, resourceVersion };
    } else if (resourceVersion) {
      this.#observed.resourceVersion = resourceVersion;
    }
  }

  /**
   * Follows the lease through a watch, so a release or another holder is noticed at once and a
   * record change is timed when it happens rather than at the next poll. Polling goes on
   * regardless: this only makes things faster, never safer.
   */
  async #watchLease(signal: AbortSignal): Promise<void> {
    const { namespace, name } = this.#options;
    const backoff = new ReconnectBackoff();
    while (!signal.aborted) {
      const from = this.#observed?.resourceVersion;
      if (!from) {
        await sleep(200, signal);
        continue;
      }
      const started = performance.now();
      try {
        for await (
          const event of this.#client.watch<Lease>(LEASE, {
            namespace,
            fieldSelector: `metadata.name=${name}`,
            resourceVersion: from,
            signal,
          })
        ) {
          if (event.type === "BOOKMARK") continue;
          this.#observe(event.type === "DELETED" ? undefined : event.object, Instant.now());
          this.#wake?.();
        }
        backoff.reset();
      } catch (error) {
        if (signal.aborted) break;
        // 410: our resourceVersion is too old; the next look at the lease brings a new one.
        if (isApiError(error, 410) && this.#observed) this.#observed.resourceVersion = "";
        await sleep(backoff.next(performance.now() - started), signal);
      }
    }
  }

  /** Gives the lease up so another instance can take it without waiting for it to expire. */
  async #release(): Promise<void> {
    const { namespace, name, identity, log } = this.#options;
    try {
      const lease = await this.#client.get<Lease>(LEASE, name, { namespace, timeoutMs: 5_000 });
      if (lease.spec?.holderIdentity !== identity) return;
      const now = microTime(Date.now());
      await this.#client.update<Lease>(LEASE, {
        ...lease,
        spec: {
          leaseTransitions: lease.spec.leaseTransitions,
          leaseDurationSeconds: 1,
          acquireTime: now,
          renewTime: now,
        },
      }, { timeoutMs: 5_000 });
      log.info("released lease {lease}", { lease: name });
    } catch (error) {
      log.warn("could not release lease {lease}: {error}", {
        lease: name,
        error: (error as Error).message,
      });
    }
  }
}

/** `<hostname>_<random>`: unique per process, readable in `kubectl get lease`. */
export function defaultIdentity(): string {
  let host = "unknown";
  try {
    host = Deno.hostname();
  } catch {
    // no --allow-sys=hostname: the random part still makes it unique
  }
  return `${host}_${crypto.randomUUID().slice(0, 8)}`;
}
