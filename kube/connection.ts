/**
 * One connection to the API server (a Deno HttpClient, one HTTP/2 connection) with its own
 * health record and watchdog: while anything waits on it and nothing arrives, it asks `/livez`
 * on it, and when that goes unanswered too it is replaced, failing everything still using it.
 */
import { getLogger } from "@logtape/logtape";
import { monotonicMs } from "../util/clock.ts";
import type { ConnectionHealth } from "./connection_health.ts";
import { NetworkError } from "./network_error.ts";

const log = getLogger(["ptemplate", "client"]);

/**
 * A watchdog timer this late did not run because the process did not: the silence it would judge
 * may be ours, with answers waiting unread.
 */
const LATE_WATCHDOG_MS = 1_000;

/**
 * The streams a connection may have open at once: kube-apiserver's limit per HTTP/2 connection
 * (`--http2-max-streams-per-connection`; 0, the default, means 100 since Kubernetes 1.29). Deno
 * queues a request past it, unsent, until a stream ends: a request waiting there is not on the
 * wire, and a `/livez` waiting there could not tell a busy connection from a dead one. So a
 * connection counts its streams itself, and keeps the last for that question.
 */
export const SERVER_STREAMS = 100;

export interface ConnectionOptions {
  /** The API server, for messages. */
  server: string;
  /** Opens the HTTP client (TLS and client certificate from the config). */
  open: () => Deno.HttpClient;
  health: ConnectionHealth;
  /** Sends a `/livez` on this connection (any answer will do: it asks the connection). */
  probe: (connection: Connection) => void;
  /**
   * Called to replace it when its watchdog finds it dead; by default `renew`. (The transport's
   * main connection goes through `Transport.reset`, where tests count replacements.)
   */
  replace?: (reason: string, failure: NetworkError) => void;
}

export class Connection {
  readonly health: ConnectionHealth;
  /** Long-lived streams (watches) open on it now; see Transport's stream connections. */
  streams = 0;
  /** Requests on the wire now (the probe aside). */
  #requests = 0;
  /** Requests waiting for a stream of their own, first come first served. */
  readonly #waiting: ((release: () => void) => void)[] = [];
  readonly #options: ConnectionOptions;
  #client: Deno.HttpClient;
  /** Aborted when the connection is replaced: every request made on it ends at once. */
  #epoch = new AbortController();
  /** The watchdog's timer while anything waits on the connection. */
  #watchdog?: ReturnType<typeof setTimeout>;
  #closed = false;

  constructor(options: ConnectionOptions) {
    this.#options = options;
    this.health = options.health;
    this.#client = options.open();
  }

  /**
   * A stream for one more request, if one is free beside the streams and requests on it (one is
   * kept for the probe) and nobody waits for one; returns its release.
   */
  take(): (() => void) | undefined {
    if (this.#waiting.length || this.streams + this.#requests >= SERVER_STREAMS - 1) {
      return undefined;
    }
    this.#requests++;
    return this.#release();
  }

  /** Waits, first come first served, for a stream (see `take`); throws if `signal` aborts. */
  room(signal?: AbortSignal): Promise<() => void> {
    const taken = this.take();
    if (taken) return Promise.resolve(taken);
    signal?.throwIfAborted();
    const { promise, resolve, reject } = Promise.withResolvers<() => void>();
    const abort = () => {
      this.#waiting.splice(this.#waiting.indexOf(handOver), 1);
      reject(signal!.reason);
    };
    const handOver = (release: () => void) => {
      signal?.removeEventListener("abort", abort);
      resolve(release);
    };
    this.#waiting.push(handOver);
    signal?.addEventListener("abort", abort, { once: true });
    return promise;
  }

  /** Gives the stream back: to the first who waits for one, else to the connection. */
  #release(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.shift();
      if (next) next(this.#release());
      else this.#requests--;
    };
  }

  /** The HTTP client to send on. */
  get client(): Deno.HttpClient {
    return this.#client;
  }

  /** Aborts (with the reason) when this connection is replaced or closed. */
  get epoch(): AbortSignal {
    return this.#epoch.signal;
  }

  /**
   * Replaces the connection: closes the HTTP client, opens a new one for later requests, and
   * fails every request and stream still using the old one (closing a Deno HttpClient alone
   * leaves a stream on a dead connection waiting forever), with `failure` (by default:
   * "replaced").
   */
  renew(reason: string, failure?: NetworkError): void {
    if (this.#closed) return;
    const old = this.#epoch;
    this.#epoch = new AbortController();
    this.health.newConnection();
    log.info("replacing the connection to {server}: {reason}", {
      server: this.#options.server,
      reason,
    });
    old.abort(
      failure ??
        new NetworkError(
          "replaced",
          `the connection to ${this.#options.server} was replaced: ${reason}`,
        ),
    );
    this.#client.close();
    this.#client = this.#options.open();
  }

  /** Fails everything on it with `failure` and closes it for good. */
  close(failure: NetworkError = new NetworkError("replaced", "the client was closed")): void {
    this.#closed = true;
    clearTimeout(this.#watchdog);
    this.#epoch.abort(failure);
    this.#client.close();
  }

  /**
   * Runs the watchdog while anything waits on the connection: asks `/livez` after a silence,
   * replaces the connection when that goes unanswered too (see ConnectionHealth).
   */
  arm(): void {
    if (this.#watchdog !== undefined || this.#closed) return;
    const verdict = this.health.verdict();
    if (verdict.action === "wait" && verdict.checkInMs === undefined) return;
    const delay = verdict.action === "wait" ? Math.max(verdict.checkInMs!, 50) : 0;
    const due = monotonicMs() + delay;
    const timer = setTimeout(() => {
      this.#watchdog = undefined;
      this.#look(due);
    }, delay);
    Deno.unrefTimer(timer);
    this.#watchdog = timer;
  }

  #look(due: number): void {
    if (this.#closed) return;
    if (monotonicMs() - due > LATE_WATCHDOG_MS) {
      // This process did not run for a while (frozen, starved): what arrived meanwhile has not
      // been read yet. Read it before judging the connection by a silence that was our own.
      const timer = setTimeout(() => {
        this.#watchdog = undefined;
        this.#look(monotonicMs());
      }, 250);
      Deno.unrefTimer(timer);
      this.#watchdog = timer;
      return;
    }
    const verdict = this.health.verdict();
    if (verdict.action === "probe") {
      this.health.probeSent();
      this.#options.probe(this);
    } else if (verdict.action === "replace") {
      const seconds = Math.round(verdict.silentMs / 1000);
      const reason = `nothing arrived on it for ${seconds} s, not even an answer to /livez`;
      // What was waiting on it got no answer: a timeout, as its own deadline would have said.
      const silent = new NetworkError(
        "timeout",
        `no answer from ${this.#options.server} within ${seconds} s: nothing at all arrived on ` +
          `the connection, not even an answer to /livez, so it was replaced`,
      );
      this.health.failed(silent);
      (this.#options.replace ?? ((r, f) => this.renew(r, f)))(reason, silent);
    }
    this.arm();
  }
}
