/**
 * A loopback TCP proxy a test can cut or slow: it forwards bytes (TLS passes through untouched)
 * until told to drop every connection (a partition that resets), to swallow them in silence (a
 * black hole, where nothing is closed and nothing arrives), or to hold every answer back for a
 * while (a congested or distant server), as a network fault would.
 */

interface Link {
  client: Deno.Conn;
  server?: Deno.Conn;
  /** Swallowed: bytes are read and thrown away in both directions, nothing is closed. */
  dead: boolean;
  /** Bytes from the server, delivered to the client in order, each when its delay is over. */
  answers: Promise<void>;
  /** When the latest of them is due. */
  lastDue: number;
}

/** Extra latency on every answer: each chunk the server sends is held for `minMs`–`maxMs`. */
export interface Latency {
  minMs: number;
  maxMs: number;
}

export class TcpProxy {
  readonly port: number;
  readonly #listener: Deno.TcpListener;
  readonly #target: { hostname: string; port: number };
  readonly #links = new Set<Link>();
  #mode: "forward" | "refuse" | "swallow" = "forward";
  #latency?: Latency;
  #accepted = 0;
  #accepting: Promise<void>;

  constructor(target: { hostname: string; port: number }) {
    this.#target = target;
    this.#listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    this.port = (this.#listener.addr as Deno.NetAddr).port;
    this.#accepting = this.#accept();
  }

  /** Connections open now (forwarding or swallowed). */
  get connections(): number {
    return this.#links.size;
  }

  /** Connections accepted since the proxy started: how often the client connected anew. */
  get accepted(): number {
    return this.#accepted;
  }

  /**
   * Holds back every chunk the server sends for a random `minMs`–`maxMs` (never reordering them),
   * on open connections and new ones, until `slow(undefined)`. Nothing is dropped: it is a slow
   * path, not a broken one.
   */
  slow(latency: Latency | undefined): void {
    this.#latency = latency;
  }

  /** Drops every open connection and refuses new ones until `unblock()`. */
  block(): void {
    this.#mode = "refuse";
    for (const link of this.#links) this.#close(link);
  }

  /**
   * A black hole: open connections stop delivering anything in either direction but are never
   * closed (no FIN, no RST), and new connections are accepted and then swallowed the same way,
   * until `unblock()`. Connections swallowed once stay dead for good, as they would after a
   * middlebox forgot them.
   */
  blackhole(): void {
    this.#mode = "swallow";
    for (const link of this.#links) link.dead = true;
  }

  /** New connections are forwarded again (swallowed ones stay dead). */
  unblock(): void {
    this.#mode = "forward";
  }

  async close(): Promise<void> {
    this.block();
    this.#listener.close();
    await this.#accepting;
  }

  async #accept(): Promise<void> {
    for (;;) {
      let client: Deno.Conn;
      try {
        client = await this.#listener.accept();
      } catch {
        return; // listener closed
      }
      this.#accepted++;
      if (this.#mode === "refuse") {
        closeConn(client);
        continue;
      }
      const link: Link = {
        client,
        dead: this.#mode === "swallow",
        answers: Promise.resolve(),
        lastDue: 0,
      };
      this.#serve(link).catch(() => {});
    }
  }

  async #serve(link: Link): Promise<void> {
    this.#links.add(link);
    if (!link.dead) {
      try {
        link.server = await Deno.connect(this.#target);
      } catch {
        this.#close(link);
        return;
      }
    }
    await Promise.allSettled([
      this.#pump(link, link.client, () => link.server, false),
      this.#pump(link, link.server, () => link.client, true),
    ]);
    this.#close(link);
  }

  /**
   * Copies `from` to the other side until either ends; once the link is dead, reads and drops.
   * Answers (`fromServer`) go through the link's queue, which holds them back while slowed.
   */
  async #pump(
    link: Link,
    from: Deno.Conn | undefined,
    to: () => Deno.Conn | undefined,
    fromServer: boolean,
  ): Promise<void> {
    if (!from) return;
    const buffer = new Uint8Array(64 * 1024);
    for (;;) {
      const n = await from.read(buffer);
      if (n === null) {
        // Pass the half-close on, as a router would; a dead link passes nothing.
        if (fromServer) await link.answers;
        if (!link.dead) await to()?.closeWrite().catch(() => {});
        return;
      }
      if (link.dead) continue;
      const target = to();
      if (!target) return;
      if (!fromServer) {
        await writeAll(target, buffer.subarray(0, n));
        continue;
      }
      const chunk = buffer.slice(0, n);
      const latency = this.#latency;
      const extra = latency ? latency.minMs + Math.random() * (latency.maxMs - latency.minMs) : 0;
      const due = Math.max(link.lastDue, performance.now() + extra);
      link.lastDue = due;
      link.answers = link.answers.then(async () => {
        const wait = due - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        if (!link.dead) await writeAll(target, chunk);
      }).catch(() => this.#close(link));
    }
  }

  #close(link: Link): void {
    this.#links.delete(link);
    closeConn(link.client);
    if (link.server) closeConn(link.server);
  }
}

async function writeAll(target: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let written = 0;
  while (written < bytes.length) written += await target.write(bytes.subarray(written));
}

function closeConn(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // already closed
  }
}
