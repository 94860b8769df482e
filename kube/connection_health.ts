/**
 * Judges whether the connection to the API server is alive: what is waiting on it, when anything
 * last arrived on it, and whether a silence is long enough to call it dead.
 *
 * Slow is not dead. One request that takes long says nothing about the connection while other
 * answers (or watch events) still arrive on it; a connection is dead only when *nothing at all*
 * arrives. So after `probeAfterMs` of silence while something waits, the transport asks the
 * server for `/livez` (HTTP/2 would send a PING; Deno does not expose that), and only when that
 * question too goes unanswered for `probeTimeoutMs` is the connection replaced. The longest
 * latency a working connection survives is therefore `probeTimeoutMs` per answer (5 s by default).
 */
import { type Clock, systemClock } from "../util/clock.ts";
import type { NetworkError } from "./network_error.ts";

/** How a silent connection is told from a slow one. */
export interface ConnectionCheckOptions {
  /**
   * Ask `/livez` after this long without anything arriving while a request or watch is open;
   * default 3 s. Shorter asks more often on a quiet connection (one small GET each time).
   */
  probeAfterMs?: number;
  /**
   * Replace the connection when nothing at all arrived for this long after that question;
   * default 5 s. This is the most latency an answer may have: a server slower than this to say
   * anything is taken for dead, its connection replaced and everything on it retried. Longer
   * rides out slower links but leaves a dead connection in place for longer (the leader's lease
   * is lost when that exceeds its renew deadline, 10 s, less `probeAfterMs`).
   */
  probeTimeoutMs?: number;
}

/** Since when, and why, the API server has not answered. */
export interface Unreachable {
  /** Milliseconds since the first failure after the last answer. */
  forMs: number;
  /** The latest failure, which names what went wrong below HTTP. */
  error: NetworkError;
}

/** What the transport should do about its connection now. */
export type Verdict =
  /** Nothing; look again after `checkInMs` (undefined: nothing is waiting, no need to look). */
  | { action: "wait"; checkInMs?: number }
  /** Ask the server something small: the connection has been silent for a while. */
  | { action: "probe" }
  /** Replace the connection: nothing arrived for `silentMs`, not even an answer to the probe. */
  | { action: "replace"; silentMs: number };

/**
 * The health record of one connection: fed every arrival and failure, it tells the transport
 * whether to wait, probe `/livez` or replace the connection (see the module doc).
 */
export class ConnectionHealth {
  readonly #clock: Clock;
  #probeAfterMs: number;
  #probeTimeoutMs: number;
  /**
   * The record of the transport's main connection, when this is one of its other connections
   * (see `follow`): its timings, and what the server as a whole is said to do.
   */
  #main?: ConnectionHealth;
  /** When anything last arrived on this connection. */
  #lastArrival: number;
  /** When anything last arrived from the server, on this connection or one that follows it. */
  #heardAt: number;
  /** Exchanges in progress: requests waiting for an answer, streams being read. */
  #open = 0;
  /** When the count of open exchanges last rose from zero: silence before that is idleness. */
  #busySince = 0;
  /** When the probe now outstanding was sent (cleared by any arrival). */
  #probeSentAt?: number;
  #failingSince?: number;
  #lastError?: NetworkError;
  readonly #recovered = new Set<() => void>();

  /** Starts as if something had just arrived; `clock` is the system's unless a test jumps it. */
  constructor(options: ConnectionCheckOptions = {}, clock: Clock = systemClock) {
    this.#clock = clock;
    this.#probeAfterMs = options.probeAfterMs ?? 3_000;
    this.#probeTimeoutMs = options.probeTimeoutMs ?? 5_000;
    this.#lastArrival = this.#heardAt = clock.monotonicMs();
  }

  /** Changes the timings (see ConnectionCheckOptions); unset fields keep their value. */
  configure(options: ConnectionCheckOptions): void {
    this.#probeAfterMs = options.probeAfterMs ?? this.#probeAfterMs;
    this.#probeTimeoutMs = options.probeTimeoutMs ?? this.#probeTimeoutMs;
  }

  /**
   * Makes this the record of another connection of `main`'s transport (one for watches): it is
   * judged with `main`'s timings, as `main` is configured, and what arrives on it or fails on it
   * counts for the server as a whole (`unreachable`, `onRecovered`, `silentSince`), which `main`
   * keeps. Whether this connection itself is silent stays its own.
   */
  follow(main: ConnectionHealth): void {
    this.#main = main;
  }

  /** Milliseconds of silence before `/livez` is asked, by `main`'s timings when this follows it. */
  get probeAfterMs(): number {
    return this.#main?.probeAfterMs ?? this.#probeAfterMs;
  }

  /**
   * Milliseconds a probe may go unanswered before the connection is replaced, by `main`'s timings
   * when this follows it.
   */
  get probeTimeoutMs(): number {
    return this.#main?.probeTimeoutMs ?? this.#probeTimeoutMs;
  }

  /** Any HTTP answer, or bytes on a stream: the connection works, and the server answers. */
  answered(): void {
    this.#lastArrival = this.#clock.monotonicMs();
    this.#probeSentAt = undefined;
    (this.#main ?? this).#heard();
  }

  /** The server answered, on some connection. */
  #heard(): void {
    const recovered = this.#failingSince !== undefined;
    this.#heardAt = this.#clock.monotonicMs();
    this.#failingSince = undefined;
    this.#lastError = undefined;
    if (recovered) { for (const handler of this.#recovered) handler(); }
  }

  /** Calls `handler` when the server answers again after requests got no answer at all. */
  onRecovered(handler: () => void): () => void {
    this.#recovered.add(handler);
    return () => this.#recovered.delete(handler);
  }

  /** An exchange starts waiting on the connection; call the result once when it ends. */
  open(): () => void {
    if (this.#open++ === 0) this.#busySince = this.#clock.monotonicMs();
    let closed = false;
    return () => {
      if (closed) return;
      closed = true;
      this.#open--;
    };
  }

  /** The probe asked for by a "probe" verdict went out. */
  probeSent(): void {
    this.#probeSentAt = this.#clock.monotonicMs();
  }

  /** The connection was replaced: silence on the old one says nothing about the new one. */
  newConnection(): void {
    this.#busySince = this.#clock.monotonicMs();
    this.#probeSentAt = undefined;
  }

  /** A request got no answer at all (said of the server: kept by the main record). */
  failed(error: NetworkError): void {
    const record = this.#main ?? this;
    record.#failingSince ??= this.#clock.monotonicMs();
    record.#lastError = error;
  }

  /** True when nothing has arrived from the server, on any connection, since the instant `since`. */
  silentSince(since: number): boolean {
    return (this.#main ?? this).#heardAt < since;
  }

  /** What to do about the connection now (see the module doc). */
  verdict(): Verdict {
    if (this.#open === 0) return { action: "wait" };
    const now = this.#clock.monotonicMs();
    const { probeAfterMs, probeTimeoutMs } = this;
    if (this.#probeSentAt !== undefined) {
      const waited = now - this.#probeSentAt;
      if (waited >= probeTimeoutMs) {
        return { action: "replace", silentMs: now - this.#lastArrival };
      }
      return { action: "wait", checkInMs: probeTimeoutMs - waited };
    }
    const quiet = now - Math.max(this.#lastArrival, this.#busySince);
    if (quiet >= probeAfterMs) return { action: "probe" };
    return { action: "wait", checkInMs: probeAfterMs - quiet };
  }

  /** Milliseconds since anything last arrived on this connection (or since this was created). */
  silentForMs(): number {
    return this.#clock.monotonicMs() - this.#lastArrival;
  }

  /** Undefined while requests get answers; otherwise how long they have not, and the last reason. */
  unreachable(): Unreachable | undefined {
    const record = this.#main ?? this;
    if (record.#failingSince === undefined || !record.#lastError) return undefined;
    return { forMs: this.#clock.monotonicMs() - record.#failingSince, error: record.#lastError };
  }
}
