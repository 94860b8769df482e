import { expect } from "expect";
import { TcpProxy } from "./tcp_proxy.ts";

/** A TCP server that answers every chunk with the same bytes. */
function echoServer() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const serving = (async () => {
    for await (const conn of listener) {
      (async () => {
        const buffer = new Uint8Array(1024);
        for (let n; (n = await conn.read(buffer)) !== null;) await conn.write(buffer.slice(0, n));
        conn.close();
      })().catch(() => {});
    }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    async close() {
      listener.close();
      await serving.catch(() => {});
    },
  };
}

async function readText(conn: Deno.Conn, length: number): Promise<string> {
  const bytes = new Uint8Array(length);
  let got = 0;
  while (got < length) {
    const n = await conn.read(bytes.subarray(got));
    if (n === null) break;
    got += n;
  }
  return new TextDecoder().decode(bytes.subarray(0, got));
}

Deno.test("a slowed proxy holds every answer back, in order, and counts connections", async () => {
  const echo = echoServer();
  const proxy = new TcpProxy({ hostname: "127.0.0.1", port: echo.port });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: proxy.port });
  try {
    await conn.write(new TextEncoder().encode("a"));
    expect(await readText(conn, 1)).toBe("a");
    proxy.slow({ minMs: 300, maxMs: 400 });
    const sent = performance.now();
    for (const letter of "bcdef") {
      await conn.write(new TextEncoder().encode(letter));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(await readText(conn, 5)).toBe("bcdef");
    expect(performance.now() - sent).toBeGreaterThanOrEqual(300);
    proxy.slow(undefined);
    await conn.write(new TextEncoder().encode("g"));
    expect(await readText(conn, 1)).toBe("g");
    expect(proxy.accepted).toBe(1);
  } finally {
    conn.close();
    await proxy.close();
    await echo.close();
  }
});
