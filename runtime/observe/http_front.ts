/**
 * The TCP front of every server of ours: it accepts connections on the public address, joins each
 * to a backend on loopback byte for byte, and bounds what callers may hold there. Deno.serve has
 * none of these knobs (it keeps a connection that never speaks, or that sends half a request, open
 * for ever, each a file descriptor and buffers), so they live here, below it: connections in all
 * and per caller, the time to finish a handshake, the time a client may wait for an answer, and
 * the time a connection may sit idle. A backend can be swapped (a new certificate) without
 * closing the public port: new connections go to the new one.
 */
import { StartupError } from "../../util/startup_error.ts";
import type { Logger } from "./logging.ts";
import { WarningThrottle } from "./warning_throttle.ts";

/** Where to listen; `flag` names the setting in errors (`--metrics-bind-address`). */
export interface BindAddress {
  /** The address to listen on (`0.0.0.0` for every interface). */
  hostname: string;
  /** The port; 0 for any free one. */
  port: number;
  /** The flag it came from, named in errors (`--metrics-bind-address`). */
  flag?: string;
}

/** `host:port`, `:port` (all interfaces) or `0`/`` (disabled). */
export function parseBindAddress(address: string, flag: string): BindAddress | undefined {
  if (address === "0" || address === "") return undefined;
  const match = address.match(/^(\[[^\]]+\]|[^:]*):(\d+)$/);
  if (!match || Number(match[2]) > 65535) {
    throw new TypeError(`${flag} "${address}" is not host:port, :port or 0 (disabled)`);
  }
  return {
    hostname: match[1].replace(/^\[|\]$/g, "") || "0.0.0.0",
    port: Number(match[2]),
    flag,
  };
}

/** True when `bind` listens on this machine alone (127.0.0.0/8, ::1, localhost). */
export function isLoopback(bind: BindAddress): boolean {
  return /^127\./.test(bind.hostname) || bind.hostname === "::1" || bind.hostname === "localhost";
}

/** What one connection and one caller (an IP address) may hold. */
export interface ConnectionLimits {
  /**
   * Connections open at once; more are closed as they come. Too low, and a burst of honest
   * callers is turned away; too high, and a flood holds that many file descriptors (three each).
   */
  maxConnections: number;
  /**
   * Connections open at once from one address, so that one caller cannot take every slot.
   * Callers behind one NAT, or everything on loopback, count as one.
   */
  maxConnectionsPerCaller: number;
  /**
   * From the connection to a finished TLS handshake (plain HTTP: the first byte of a request).
   * A connection that never says hello is closed after this.
   */
  handshakeMs: number;
  /**
   * How long a client may wait for the server after sending: a request that comes a byte at a
   * time, or a handler that hangs, is cut off after this (the whole request: headers, body,
   * handling). Longer than the slowest honest request.
   */
  requestMs: number;
  /** A connection with no bytes either way for this long is closed (keep-alive included). */
  idleMs: number;
}

/**
 * What a server allows unless told otherwise: 256 connections (64 per caller), 10 s to say hello,
 * 30 s per request, 90 s idle.
 */
export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  maxConnections: 256,
  maxConnectionsPerCaller: 64,
  handshakeMs: 10_000,
  requestMs: 30_000,
  idleMs: 90_000,
};

/** One TCP front: where it listens, what callers may hold, and which backend they are joined to. */
export interface HttpFrontOptions {
  /** The public address. */
  bind: BindAddress;
  /** What the server is called in logs: `webhooks`, `metrics`, `probes`. */
  name: string;
  /** Whether callers speak TLS (the handshake counts as done after its second client flight). */
  tls: boolean;
  /** Overrides of DEFAULT_CONNECTION_LIMITS, field by field. */
  limits?: Partial<ConnectionLimits>;
  /** The backend's loopback port for a new connection, or undefined while there is none. */
  backend: () => number | undefined;
  /** Where the warnings about refused and cut-off connections go (throttled). */
  log: Logger;
}

/** Why the front closed connections, counted since it started. */
export interface FrontCounts {
  /** Connections closed as they came: over `maxConnections` or `maxConnectionsPerCaller`. */
  refused: number;
  /** Connections closed for not finishing their handshake in `handshakeMs`. */
  handshakeTimeouts: number;
  /** Connections closed because a request was not answered in `requestMs`. */
  requestTimeouts: number;
  /** Connections closed after `idleMs` without a byte either way. */
  idleTimeouts: number;
}

interface Link {
  caller: string;
  client: Deno.Conn;
  server?: Deno.Conn;
  openedAt: number;
  lastBytesAt: number;
  /** Set while the client has sent bytes the server has not answered yet. */
  waitingSince?: number;
  /** 0: no byte yet; 1: client spoke; 2: server answered; 3: client spoke again (TLS done). */
  phase: number;
  lastServerBytesAt: number;
  /** When the server asked for the connection to end once its answer has gone out. */
  closeAfterAnswerSince?: number;
  closed: boolean;
}

const BUFFER_BYTES = 16 * 1024;
const HELLO_BYTES = 4 * 1024;
const SWEEP_MS = 250;

/**
 * The TCP front of a server (see the module doc): listens on the public address and joins each
 * connection it admits to the current backend on loopback.
 */
export class HttpFront {
  readonly #options: HttpFrontOptions;
  readonly #limits: ConnectionLimits;
  readonly #warnings: WarningThrottle;
  readonly #links = new Set<Link>();
  readonly #perCaller = new Map<string, number>();
  /** Each backend connection's link, by the local port the front connected from. */
  readonly #byBackendPort = new Map<number, Link>();
  #listener?: Deno.TcpListener;
  #accepting?: Promise<void>;
  #sweep?: ReturnType<typeof setInterval>;
  /** Why it closed connections, counted since it started. */
  readonly counts: FrontCounts = {
    refused: 0,
    handshakeTimeouts: 0,
    requestTimeouts: 0,
    idleTimeouts: 0,
  };

  /** A front that does not listen yet (`listen`); unset limits are DEFAULT_CONNECTION_LIMITS'. */
  constructor(options: HttpFrontOptions) {
    this.#options = options;
    this.#limits = { ...DEFAULT_CONNECTION_LIMITS, ...options.limits };
    this.#warnings = new WarningThrottle(options.log);
  }

  /** The public port, once listening. */
  get port(): number | undefined {
    return this.#listener ? (this.#listener.addr as Deno.NetAddr).port : undefined;
  }

  /** Connections open now. */
  get open(): number {
    return this.#links.size;
  }

  /** The caller (IP address) behind a backend connection, by its remote port as the backend sees it. */
  callerOf(backendRemotePort: number): string | undefined {
    return this.#byBackendPort.get(backendRemotePort)?.caller;
  }

  /**
   * Ends the connection behind a backend connection once the answer being written has gone out:
   * for a refusal that leaves a body unread (Deno.serve would keep reading it, or waiting for it).
   */
  closeAfterAnswer(backendRemotePort: number): void {
    const link = this.#byBackendPort.get(backendRemotePort);
    if (link) link.closeAfterAnswerSince ??= performance.now();
  }

  /** Listens; a busy or forbidden address is a StartupError that names the flag. */
  listen(): void {
    const { hostname, port, flag } = this.#options.bind;
    try {
      this.#listener = Deno.listen({ hostname, port });
    } catch (error) {
      const address = `${flag ? `${flag} ` : ""}${hostname}:${port}`;
      if (error instanceof Deno.errors.AddrInUse) {
        throw new StartupError(
          `${address} is already in use by another process: choose another port, or 0 to turn ` +
            `it off`,
        );
      }
      if (
        error instanceof Deno.errors.PermissionDenied ||
        error instanceof Deno.errors.AddrNotAvailable
      ) {
        throw new StartupError(
          `cannot listen on ${address} (${(error as Error).message}): ports below 1024 need ` +
            `privileges, and the host must be an address of this machine`,
        );
      }
      throw error;
    }
    this.#accepting = this.#accept(this.#listener);
  }

  /**
   * Stops accepting; connections already open stay until `closeAll` (or they end), their
   * deadlines still kept: a half-sent request cannot hold up a graceful shutdown for long.
   */
  async stopAccepting(): Promise<void> {
    try {
      this.#listener?.close();
    } catch {
      // closed already
    }
    await this.#accepting;
  }

  /** Closes every connection still open. */
  closeAll(): void {
    clearInterval(this.#sweep);
    this.#sweep = undefined;
    for (const link of this.#links) this.#close(link);
  }

  async #accept(listener: Deno.TcpListener): Promise<void> {
    for (;;) {
      let client: Deno.Conn;
      try {
        client = await listener.accept();
      } catch (error) {
        if (error instanceof Deno.errors.BadResource || error instanceof Deno.errors.Interrupted) {
          return; // closed
        }
        // Out of file descriptors, say: the connection is lost, not the listener.
        this.#warnings.warn("accept", "{server}: cannot accept a connection: {error}", {
          server: this.#options.name,
          error: (error as Error).message,
        });
        await new Promise((resolve) => setTimeout(resolve, 100));
        continue;
      }
      this.#admit(client);
    }
  }

  #admit(client: Deno.Conn): void {
    const caller = (client.remoteAddr as Deno.NetAddr).hostname;
    const fromCaller = this.#perCaller.get(caller) ?? 0;
    if (
      this.#links.size >= this.#limits.maxConnections ||
      fromCaller >= this.#limits.maxConnectionsPerCaller
    ) {
      this.counts.refused++;
      closeQuietly(client);
      this.#warnings.warn(
        "refused",
        "{server}: refusing connections: {open} open (at most {max}, {perCaller} per caller)",
        {
          server: this.#options.name,
          open: this.#links.size,
          max: this.#limits.maxConnections,
          perCaller: this.#limits.maxConnectionsPerCaller,
        },
      );
      return;
    }
    const now = performance.now();
    const link: Link = {
      caller,
      client,
      openedAt: now,
      lastBytesAt: now,
      lastServerBytesAt: 0,
      phase: 0,
      closed: false,
    };
    this.#links.add(link);
    this.#perCaller.set(caller, fromCaller + 1);
    // Deadlines are kept only while there is a connection to keep them for: an idle server
    // (metrics nobody scrapes yet, probes between their periods) does not wake the process.
    this.#sweep ??= setInterval(() => this.#enforce(), SWEEP_MS);
    this.#join(link).catch(() => {}).finally(() => this.#close(link));
  }

  /** Connects to the backend only once the client has said something, then pumps both ways. */
  async #join(link: Link): Promise<void> {
    // A small buffer while nothing is said (a TLS hello fits), the pumps' only once it is.
    const hello = new Uint8Array(HELLO_BYTES);
    const first = await link.client.read(hello);
    if (first === null || link.closed) return;
    this.#fromClient(link);
    const port = this.#options.backend();
    if (port === undefined) return;
    const server = await Deno.connect({ hostname: "127.0.0.1", port });
    if (link.closed) return closeQuietly(server);
    link.server = server;
    const local = (server.localAddr as Deno.NetAddr).port;
    this.#byBackendPort.set(local, link);
    try {
      await writeAll(server, hello.subarray(0, first));
      await Promise.allSettled([
        pump(link.client, server, new Uint8Array(BUFFER_BYTES), () => this.#fromClient(link)),
        pump(server, link.client, new Uint8Array(BUFFER_BYTES), () => this.#fromServer(link)),
      ]);
    } finally {
      this.#byBackendPort.delete(local);
    }
  }

  #fromClient(link: Link): void {
    const now = performance.now();
    link.lastBytesAt = now;
    link.waitingSince ??= now;
    if (link.phase === 0) link.phase = 1;
    else if (link.phase === 2) link.phase = 3;
  }

  #fromServer(link: Link): void {
    link.lastBytesAt = link.lastServerBytesAt = performance.now();
    link.waitingSince = undefined;
    if (link.phase === 1) link.phase = 2;
  }

  /** Closes what overstays: no handshake, a client kept waiting, or nothing said for too long. */
  #enforce(): void {
    const now = performance.now();
    const limits = this.#limits;
    for (const link of this.#links) {
      const asked = link.closeAfterAnswerSince;
      // Gone out: the server wrote since it asked, and has been quiet a moment (or never wrote).
      if (
        asked !== undefined &&
        ((link.lastServerBytesAt >= asked && now - link.lastServerBytesAt >= 100) ||
          now - asked >= 2_000)
      ) {
        this.#close(link);
        continue;
      }
      const shaken = this.#options.tls ? link.phase >= 3 : link.phase >= 1;
      if (!shaken && now - link.openedAt > limits.handshakeMs) {
        this.counts.handshakeTimeouts++;
        this.#close(link);
      } else if (link.waitingSince !== undefined && now - link.waitingSince > limits.requestMs) {
        this.counts.requestTimeouts++;
        this.#close(link);
      } else if (now - link.lastBytesAt > limits.idleMs) {
        this.counts.idleTimeouts++;
        this.#close(link);
      }
    }
  }

  #close(link: Link): void {
    if (link.closed) return;
    link.closed = true;
    closeQuietly(link.client);
    if (link.server) closeQuietly(link.server);
    this.#links.delete(link);
    if (this.#links.size === 0) {
      clearInterval(this.#sweep);
      this.#sweep = undefined;
    }
    const left = (this.#perCaller.get(link.caller) ?? 1) - 1;
    if (left > 0) this.#perCaller.set(link.caller, left);
    else this.#perCaller.delete(link.caller);
  }
}

/** Copies `from` into `to` until `from` ends, then ends `to`'s writing half. */
async function pump(
  from: Deno.Conn,
  to: Deno.Conn,
  buffer: Uint8Array,
  onBytes: () => void,
): Promise<void> {
  try {
    for (;;) {
      const n = await from.read(buffer);
      if (n === null) break;
      onBytes();
      await writeAll(to, buffer.subarray(0, n));
    }
  } finally {
    try {
      await to.closeWrite();
    } catch {
      // closed already
    }
  }
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let written = 0;
  while (written < bytes.length) written += await conn.write(bytes.subarray(written));
}

function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // closed already
  }
}
