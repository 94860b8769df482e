/** Unit tests of the TCP front: its deadlines hold while a connection is open, and cost nothing idle. */
import { expect } from "expect";
import { eventually } from "../../testing/eventually.ts";
import { HttpFront } from "./http_front.ts";
import { log } from "./logging.ts";

/** Runs `body` with the intervals set and not yet cleared counted, by wrapping the globals. */
async function countingIntervals(body: (active: () => number) => Promise<void>): Promise<void> {
  const { setInterval: set, clearInterval: clear } = globalThis;
  const live = new Set<unknown>();
  globalThis.setInterval = ((...args: Parameters<typeof set>) => {
    const id = set(...args);
    live.add(id);
    return id;
  }) as typeof set;
  globalThis.clearInterval = ((id: Parameters<typeof clear>[0]) => {
    live.delete(id);
    clear(id);
  }) as typeof clear;
  try {
    await body(() => live.size);
  } finally {
    globalThis.setInterval = set;
    globalThis.clearInterval = clear;
  }
}

/** A front on loopback before a plain HTTP backend that answers "ok". */
function frontAndBackend(limits: { handshakeMs?: number } = {}) {
  const backend = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response("ok"),
  );
  const front = new HttpFront({
    bind: { hostname: "127.0.0.1", port: 0 },
    name: "test",
    tls: false,
    limits,
    backend: () => backend.addr.port,
    log: log("test"),
  });
  front.listen();
  return {
    front,
    async [Symbol.asyncDispose]() {
      await front.stopAccepting();
      front.closeAll();
      await backend.shutdown();
    },
  };
}

Deno.test("an idle front sets no timer; a connection's deadlines are kept while it is open", async () => {
  await countingIntervals(async (active) => {
    await using server = frontAndBackend();
    const { front } = server;
    expect(active()).toBe(0);

    const client = await Deno.connect({ hostname: "127.0.0.1", port: front.port! });
    await eventually(() => expect(front.open).toBe(1), { timeoutMs: 10_000, intervalMs: 10 });
    expect(active()).toBe(1);
    await client.write(
      new TextEncoder().encode("GET / HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"),
    );
    const answer = await new Response(client.readable).text();
    expect(answer).toMatch(/^HTTP\/1\.1 200[\s\S]*ok$/);

    await eventually(() => expect(front.open).toBe(0), { timeoutMs: 10_000, intervalMs: 10 });
    expect(active()).toBe(0);
  });
});

Deno.test("a connection that never speaks is closed after handshakeMs", async () => {
  await using server = frontAndBackend({ handshakeMs: 200 });
  const { front } = server;
  const client = await Deno.connect({ hostname: "127.0.0.1", port: front.port! });
  try {
    // The front ends it: the read sees the end of the stream, not a timeout of ours.
    const read = await client.read(new Uint8Array(1));
    expect({ read, handshakeTimeouts: front.counts.handshakeTimeouts }).toEqual({
      read: null,
      handshakeTimeouts: 1,
    });
    expect(front.open).toBe(0);
  } finally {
    client.close();
  }
});
