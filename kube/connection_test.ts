import { expect } from "expect";
import { Connection, SERVER_STREAMS } from "./connection.ts";
import { ConnectionHealth } from "./connection_health.ts";

function connection(): Connection {
  return new Connection({
    server: "https://127.0.0.1:6443",
    open: () => Deno.createHttpClient({}),
    health: new ConnectionHealth(),
    probe: () => {},
  });
}

Deno.test("a connection's streams: one kept for the probe, the rest first come first served", async () => {
  const c = connection();
  try {
    c.streams = 10;
    const taken = Array.from({ length: SERVER_STREAMS - 11 }, () => c.take()!);
    expect(taken.every(Boolean)).toBe(true);
    expect(c.take()).toBeUndefined();
    const order: string[] = [];
    const first = c.room().then((release) => (order.push("first"), release));
    const abort = new AbortController();
    const gaveUp = c.room(abort.signal).catch((e) => (order.push("gave up"), e.name));
    const third = c.room().then((release) => (order.push("third"), release));
    // Nobody jumps the line while someone waits, even with a stream free for a moment.
    abort.abort();
    expect(await gaveUp).toBe("AbortError");
    taken[0]();
    taken[0](); // twice is once
    expect(c.take()).toBeUndefined();
    const released = await first;
    taken[1]();
    await third;
    expect(order).toEqual(["gave up", "first", "third"]);
    released();
    // One stream is free again, beside the one kept for the probe.
    expect(c.take()).toBeDefined();
    expect(c.take()).toBeUndefined();
  } finally {
    c.close();
  }
});
