/**
 * A loopback TCP proxy a test can cut: it forwards bytes (TLS passes through untouched) until told
 * to drop every connection (a partition that resets), or to swallow them in silence (a black hole,
 * where nothing is closed and nothing arrives), as a network fault would.
 */

interface Link {
  client: Deno.Conn;
  server?: Deno.Conn;
  /** Swallowed: bytes are read and thrown away in both directions, nothing is closed. */
  dead: boolean;
}

export class TcpProxy {
  readonly port: number;
  readonly #listener: Deno.TcpListener;
  readonly #target: { hostname: string; port: number };
  readonly #links = new Set<Link>();
  #mode: "forward" | "refuse" | "swallow" = "forward";
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
      if (this.#mode === "refuse") {
        closeConn(client);
        continue;
      }
      this.#serve({ client, dead: this.#mode === "swallow" }).catch(() => {});
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
      this.#pump(link, link.client, () => link.server),
      this.#pump(link, link.server, () => link.client),
    ]);
    this.#close(link);
  }

  /** Copies `from` to the other side until either ends; once the link is dead, reads and drops. */
  async #pump(
    link: Link,
    from: Deno.Conn | undefined,
    to: () => Deno.Conn | undefined,
  ): Promise<void> {
    if (!from) return;
    const buffer = new Uint8Array(64 * 1024);
    for (;;) {
      const n = await from.read(buffer);
      if (n === null) {
        // Pass the half-close on, as a router would; a dead link passes nothing.
        if (!link.dead) await to()?.closeWrite().catch(() => {});
        return;
      }
      if (link.dead) continue;
      const target = to();
      if (!target) return;
      let written = 0;
      while (written < n) written += await target.write(buffer.subarray(written, n));
    }
  }

  #close(link: Link): void {
    this.#links.delete(link);
    closeConn(link.client);
    if (link.server) closeConn(link.server);
  }
}

function closeConn(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // already closed
  }
}
