/**
 * Leader election on a `coordination.k8s.io/v1` Lease, the client-go way: a lease is valid until
 * the *local* time we last saw it change plus its duration (remote timestamps are never compared
 * with our clock). Unlike client-go, a lost lease does not end the process: work stops at once
 * and the instance campaigns again; and a clean shutdown releases the lease so another instance
 * takes over within about one retry period.
 */
import type { KubeClient, KubeObject } from "../kube/client.ts";
import { isApiError } from "../kube/errors.ts";
import { LEASE } from "../kube/kinds.ts";
import type { Logger } from "./logging.ts";
import type { Gauge } from "./metrics.ts";

export interface LeaderElectionOptions {
  namespace: string;
  name: string;
  /** Unique per instance; default `<hostname>_<random>`. */
  identity: string;
  /**
   * How long others wait, after they last saw the lease change, before taking it; default 15 s.
   * Longer means slower failover after a crash; shorter means a slow API server can cost the lease.
   */
  leaseDurationMs?: number;
  /**
   * How long the leader keeps retrying a failed renewal before it gives up and stops all work;
   * default 10 s. Must be below the lease duration, so the old leader has stopped before anyone
   * else may start.
   */
  renewDeadlineMs?: number;
  /** Pause between attempts to acquire or renew; default 2 s. */
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
   * Stop that work. On "lost", stop at once; on "shutdown", drain (the lease is still renewed
   * until this resolves, then released).
   */
  onStoppedLeading(reason: StopReason): Promise<void>;
}

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

type Lease = KubeObject & { spec?: LeaseSpec };

/** RFC 3339 with microseconds, as `MicroTime` fields require. */
function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
  });
}

export class LeaderElector {
  readonly #client: KubeClient;
  readonly #options: Required<Omit<LeaderElectionOptions, "gauge">> & { gauge?: Gauge };
  #observed?: { record: string; at: number; spec: LeaseSpec };
  #leader = false;

  constructor(client: KubeClient, options: LeaderElectionOptions) {
    this.#client = client;
    this.#options = {
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      ...options,
    };
    const { leaseDurationMs, renewDeadlineMs, retryPeriodMs } = this.#options;
    if (!(leaseDurationMs > renewDeadlineMs && renewDeadlineMs > retryPeriodMs * 1.2)) {
      throw new RangeError(
        `leader election needs lease duration (${leaseDurationMs} ms) > renew deadline ` +
          `(${renewDeadlineMs} ms) > 1.2 × retry period (${retryPeriodMs} ms)`,
      );
    }
    this.#options.gauge?.set({ name: options.name }, 0);
  }

  get isLeader(): boolean {
    return this.#leader;
  }

  /** Campaigns, leads, and campaigns again after a loss, until `signal` aborts. */
  async run(signal: AbortSignal, callbacks: LeaderCallbacks): Promise<void> {
    const { log, retryPeriodMs, identity, name } = this.#options;
    while (!signal.aborted) {
      log.info("campaigning for lease {lease} as {identity}", { lease: name, identity });
      while (!signal.aborted && !(await this.#tryAcquireOrRenew(signal))) {
        await sleep(retryPeriodMs * (1 + 0.2 * Math.random()), signal);
      }
      if (signal.aborted) break;
      this.#setLeader(true);
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
        this.#setLeader(false);
        log.error(
          "could not renew lease {lease} within {ms} ms; stopped all work, campaigning again",
          {
            lease: name,
            ms: this.#options.renewDeadlineMs,
          },
        );
        await callbacks.onStoppedLeading("lost");
        continue;
      }
      // Shutting down: keep renewing while the work drains, so nobody else starts meanwhile.
      const lostDuringDrain = renewing.then((end) => {
        if (end === "lost") return callbacks.onStoppedLeading("lost");
      });
      await callbacks.onStoppedLeading("shutdown");
      renewStop.abort();
      const end = await renewing;
      await lostDuringDrain;
      this.#setLeader(false);
      if (end === "stopped") await this.#release();
    }
  }

  #setLeader(leader: boolean): void {
    this.#leader = leader;
    this.#options.gauge?.set({ name: this.#options.name }, leader ? 1 : 0);
  }

  /** Renews every retry period until `stop` aborts ("stopped") or renewal fails for too long ("lost"). */
  async #renewLoop(stop: AbortSignal): Promise<"lost" | "stopped"> {
    const { retryPeriodMs, renewDeadlineMs } = this.#options;
    while (!stop.aborted) {
      await sleep(retryPeriodMs, stop);
      if (stop.aborted) break;
      const deadline = Date.now() + renewDeadlineMs;
      let renewed = false;
      while (!renewed && Date.now() < deadline) {
        const attempt = AbortSignal.timeout(Math.max(1, deadline - Date.now()));
        renewed = await this.#tryAcquireOrRenew(attempt);
        if (!renewed) await sleep(Math.min(retryPeriodMs, Math.max(0, deadline - Date.now())));
      }
      if (!renewed) return "lost";
    }
    return "stopped";
  }

  /** One attempt; true when we hold the lease afterwards. Errors count as failure. */
  async #tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
    const { namespace, name, identity, leaseDurationMs, log } = this.#options;
    const now = Date.now();
    const spec: LeaseSpec = {
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
      acquireTime: microTime(now),
      renewTime: microTime(now),
      leaseTransitions: 0,
    };
    try {
      let lease: Lease;
      try {
        lease = await this.#client.get<Lease>(LEASE, name, { namespace, signal, timeoutMs: 5_000 });
      } catch (error) {
        if (!isApiError(error, 404)) throw error;
        const created = await this.#client.create<Lease>(LEASE, {
          metadata: { name, namespace },
          spec,
        }, {
          signal,
        });
        this.#observe(created.spec ?? spec, now);
        return true;
      }
      const current = lease.spec ?? {};
      this.#observe(current, now);
      const holder = current.holderIdentity;
      const validUntil = this.#observed!.at + (current.leaseDurationSeconds ?? 0) * 1000;
      if (holder && holder !== identity && validUntil > now) return false;
      if (holder === identity) {
        spec.acquireTime = current.acquireTime;
        spec.leaseTransitions = current.leaseTransitions ?? 0;
      } else {
        spec.leaseTransitions = (current.leaseTransitions ?? 0) + 1;
      }
      const updated = await this.#client.update<Lease>(LEASE, { ...lease, spec }, { signal });
      this.#observe(updated.spec ?? spec, now);
      return true;
    } catch (error) {
      if (!isApiError(error, 409)) {
        log.warn("lease {lease}: {error}", { lease: name, error: (error as Error).message });
      }
      return false;
    }
  }

  /** Remembers when (by our clock) the lease record last changed. */
  #observe(spec: LeaseSpec, now: number): void {
    const record = JSON.stringify(spec);
    if (this.#observed?.record !== record) this.#observed = { record, at: now, spec };
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
