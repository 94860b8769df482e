/**
 * What an elector has seen of its Lease: the record, when it last changed by our *monotonic*
 * clock (a standby's rule: another holder's lease runs out its duration after the change we last
 * saw, never by comparing remote timestamps with a local clock), and the newest version, which a
 * leader renews without reading it first. From these: who holds it, and until when.
 */
import type { KubeObject } from "../../kube/object.ts";
import type { Clock, Instant } from "../../util/clock.ts";

/** The fields of a Lease's spec the elector reads and writes. */
export interface LeaseSpec {
  /** Who holds the lease (the elector's identity); absent when no one does. */
  holderIdentity?: string;
  /** How long, in seconds, others wait after the record last changed before taking it. */
  leaseDurationSeconds?: number;
  /** When the holder took it (RFC 3339, microseconds); never compared with a local clock. */
  acquireTime?: string;
  /** When the holder last renewed it; a change others see, never compared with a local clock. */
  renewTime?: string;
  /** How many times the lease changed hands. */
  leaseTransitions?: number;
}

/** A Lease, as far as the elector reads it. */
export type Lease = KubeObject & { spec?: LeaseSpec };

/**
 * A standby's view: milliseconds until another holder's lease runs out, for a record last seen
 * changing at `changedAt` on `clock`'s monotonic clock (negative once it has). The wall clock
 * plays no part: a jump of it must not hand anyone a lease early.
 */
export function leaseExpiresInMs(changedAt: number, durationMs: number, clock: Clock): number {
  return durationMs - (clock.monotonicMs() - changedAt);
}

/**
 * What an elector has seen of its Lease (see the module doc): the record, when it last changed by
 * our monotonic clock, and the newest version.
 */
export class LeaseView {
  readonly #clock: Clock;
  /** The record as last seen, and when (monotonic milliseconds) we received the one that changed it. */
  #observed?: { record: string; spec: LeaseSpec; changedAt: number; resourceVersion?: string };
  #latest?: Lease;

  /** Nothing seen yet; `clock` is the one change times are read on. */
  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Remembers `lease` as seen at `at` (undefined: deleted). */
  observe(lease: Lease | undefined, at: Instant): void {
    const spec = lease?.spec ?? {};
    const record = JSON.stringify(spec);
    const resourceVersion = lease?.metadata?.resourceVersion;
    if (this.#observed?.record !== record) {
      this.#observed = { record, spec, changedAt: at.monotonic, resourceVersion };
    } else if (resourceVersion) {
      this.#observed.resourceVersion = resourceVersion;
    }
    // The newest version wins: a watch event may arrive after the answer to a later write.
    const known = Number(this.#latest?.metadata?.resourceVersion);
    if (!lease || !(Number(resourceVersion) < known)) this.#latest = lease;
  }

  /** Whether anything has been seen yet. */
  get seen(): boolean {
    return this.#observed !== undefined;
  }

  /** The newest version seen (what a renewal writes over). */
  get latest(): Lease | undefined {
    return this.#latest;
  }

  /** The holder named by the record last seen, whatever its lease's state. */
  get holderIdentity(): string | undefined {
    return this.#observed?.spec.holderIdentity;
  }

  /** The resourceVersion to watch from; empty once it was found too old (410). */
  get resourceVersion(): string | undefined {
    return this.#observed?.resourceVersion;
  }

  /** The version to watch from is too old: the next look at the Lease brings another. */
  forgetResourceVersion(): void {
    if (this.#observed) this.#observed.resourceVersion = "";
  }

  /** True when the record names a holder other than `identity` whose lease has not run out. */
  heldByAnother(identity: string): boolean {
    const holder = this.holderIdentity;
    return Boolean(holder) && holder !== identity && this.expiresInMs() > 0;
  }

  /** True when the record is free for `identity`: no holder, itself, or run out. */
  looksFree(identity: string): boolean {
    return this.#observed !== undefined && !this.heldByAnother(identity);
  }

  /** Milliseconds until the holder's lease runs out by our clock (Infinity if none was seen). */
  expiresInMs(): number {
    const observed = this.#observed;
    if (!observed) return Infinity;
    const duration = (observed.spec.leaseDurationSeconds ?? 0) * 1000;
    return leaseExpiresInMs(observed.changedAt, duration, this.#clock);
  }
}
