/**
 * A loopback TCP proxy a test can cut: it forwards bytes (TLS passes through untouched) until
 * told to drop every connection and refuse new ones, as a network partition would.
 */

export class TcpProxy {
  readonly port: number;
  readonly #listener: Deno.TcpListener;
  readonly #target: { hostname: string; port: number };
  readonly #open = new Set<Deno.Conn>();
  #blocked = false;
  #accepting: Promise<void>;

  constructor(target: { hostname: string; port: number }) {
    this.#target = target;
    this.#listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    this.port = (this.#listener.addr as Deno.NetAddr).port;
    this.#accepting = this.#accept();
  }

  /** Drops every open connection and refuses new ones until `unblock()`. */
  block(): void {
    this.#blocked = true;
    for (const conn of this.#open) close(conn);
    this.#open.clear();
  }

  unblock(): void {
    this.#blocked = false;
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
      if (this.#blocked) {
        close(client);
        continue;
      }
      this.#pipe(client).catch(() => {});
    }
  }

  async #pipe(client: Deno.Conn): Promise<void> {
    let server: Deno.Conn;
    try {
      server = await Deno.connect(this.#target);
    } catch {
      close(client);
      return;
    }
    this.#open.add(client);
    this.#open.add(server);
    await Promise.allSettled([
      client.readable.pipeTo(server.writable),
      server.readable.pipeTo(client.writable),
    ]);
    this.#open.delete(client);
    this.#open.delete(server);
    close(client);
    close(server);
  }
}

function close(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // already closed
  }
}
