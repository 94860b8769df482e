import { expect } from "expect";
import { TcpProxy } from "../testing/tcp_proxy.ts";
import type { ConnectionCheckOptions } from "./connection_health.ts";
import { NetworkError } from "./network_error.ts";
import { NotLeaderError } from "./write_fence.ts";
import { SERVER_STREAMS } from "./connection.ts";
import { STREAMS_PER_CONNECTION, Transport } from "./transport.ts";

const base = { server: "https://127.0.0.1:6443", namespace: "default", source: "kubeconfig /k" };

Deno.test("insecure-skip-tls-verify cannot be honoured per client in Deno: a clear error", () => {
  expect(() => new Transport({ ...base, insecureSkipTlsVerify: true }))
    .toThrow(
      /kubeconfig \/k sets insecure-skip-tls-verify.*certificate-authority.*--unsafely-ignore-certificate-errors/s,
    );
});

Deno.test("a server without scheme, and half a client certificate, are refused by name", () => {
  expect(() => new Transport({ ...base, server: "127.0.0.1:6443" })).toThrow(
    /must start with https:\/\//,
  );
  expect(() => new Transport({ ...base, clientCertData: "x" })).toThrow(
    /needs both its certificate and its key/,
  );
});

/**
 * A plain-HTTP server whose `/stream` sends a line every 50 ms forever, `/burst` sends BURST at
 * once, `/hang` never answers, `/slow` answers after `slowMs`, and anything else (such as `/livez`)
 * answers at once; reached through a proxy the test can black-hole.
 */
function streamingServer(options: { slowMs?: number; health?: ConnectionCheckOptions } = {}) {
  const hang = Promise.withResolvers<void>();
  const slow = { now: 0, most: 0 };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    const path = new URL(request.url).pathname;
    if (path === "/hang") return hang.promise.then(() => new Response());
    if (path === "/slow") {
      slow.most = Math.max(slow.most, ++slow.now);
      return new Promise<Response>((resolve) =>
        setTimeout(() => {
          slow.now--;
          resolve(new Response("slow"));
        }, options.slowMs ?? 0)
      );
    }
    if (path === "/burst") return new Response(BURST);
    if (path !== "/stream") return new Response("ok");
    let timer: ReturnType<typeof setInterval>;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        timer = setInterval(() => {
          try {
            controller.enqueue(new TextEncoder().encode("{}\n"));
          } catch {
            clearInterval(timer);
          }
        }, 50);
      },
      cancel: () => clearInterval(timer),
    });
    return new Response(body);
  });
  const proxy = new TcpProxy({ hostname: "127.0.0.1", port: server.addr.port });
  const transport = new Transport({ ...base, server: `http://127.0.0.1:${proxy.port}` });
  if (options.health) transport.health.configure(options.health);
  let replaced = 0;
  const reset = transport.reset.bind(transport);
  transport.reset = (...args) => {
    replaced++;
    reset(...args);
  };
  return {
    transport,
    proxy,
    /** Requests to /slow at the server at once, now and at most. */
    slow,
    replaced: () => replaced,
    async [Symbol.asyncDispose]() {
      hang.resolve();
      transport.close();
      await proxy.close();
      // A stream that failed to stop would hold a graceful shutdown forever; the test says why.
      await within(2_000, server.shutdown());
    },
  };
}

/** Far more than one read of a watch stream (64 KiB), in lines that tell where they belong. */
const BURST = Array.from({ length: 30_000 }, (_, i) => `{"line":${i}}\n`).join("");

/** Reads a body to its end; resolves with how it ended. */
async function drain(response: Response): Promise<string> {
  try {
    for await (const _ of response.body!) { /* keep reading */ }
    return "ended";
  } catch (error) {
    return (error as Error).name;
  }
}

const within = <T>(ms: number, promise: Promise<T>) =>
  Promise.race([
    promise,
    new Promise<string>((resolve) => setTimeout(() => resolve("still running"), ms)),
  ]);

Deno.test("a streamed body stops when its signal aborts, even after garbage collection", async () => {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("run with --v8-flags=--expose-gc (deno task test does)");
  await using s = streamingServer();
  const abort = new AbortController();
  const response = await s.transport.fetch("/stream", {
    method: "GET",
    timeoutMs: 5_000,
    stream: true,
    signal: abort.signal,
  });
  const reading = drain(response);
  // Deno aborts a body through its Response object; a wrapper that let it be collected kept
  // the stream running after the abort (a watch outlived shutdown by minutes).
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  abort.abort();
  expect(await within(2_000, reading)).toBe("AbortError");
});

Deno.test("a streamed body's chunks hold their own bytes only, each apart from the next", async () => {
  await using s = streamingServer();
  const response = await s.transport.fetch("/burst", {
    method: "GET",
    timeoutMs: 5_000,
    stream: true,
  });
  // Held until the end: a chunk that shared its memory with the next read would be overwritten.
  const chunks: Uint8Array[] = [];
  for await (const chunk of response.body!) chunks.push(chunk);
  expect(chunks.length).toBeGreaterThan(1);
  // Deno's reader gives every chunk a buffer of 64 KiB, kept alive by a chunk of a few bytes
  // until V8 collects it: a busy watch held megabytes that way.
  for (const chunk of chunks) expect(chunk.buffer.byteLength).toBe(chunk.byteLength);
  const decoder = new TextDecoder();
  expect(chunks.map((chunk) => decoder.decode(chunk, { stream: true })).join("")).toBe(BURST);
});

Deno.test("a request without an answer fails alone: the connection and its watch carry on", async () => {
  await using s = streamingServer();
  const watch = await s.transport.fetch("/stream", {
    method: "GET",
    timeoutMs: 5_000,
    stream: true,
  });
  const reader = watch.body!.getReader();
  const late = await s.transport.fetch("/hang", { method: "GET", timeoutMs: 200 }).catch((e) => e);
  expect(late).toBeInstanceOf(NetworkError);
  expect(late.failure).toBe("timeout");
  expect(late.message).toMatch(/^no answer from http:\/\/127\.0\.0\.1:\d+ within 0\.2 s$/);
  // Answers kept arriving meanwhile: one slow request is not a dead server, nor a dead connection.
  for (let i = 0; i < 3; i++) expect((await reader.read()).done).toBe(false);
  expect(s.replaced()).toBe(0);
  expect(s.transport.health.unreachable()).toBeUndefined();
  await reader.cancel();
});

Deno.test("a slow answer survives: the connection is asked /livez, which answers", async () => {
  // Slower than the probe's own timeout, several times over.
  await using s = streamingServer({
    slowMs: 1_500,
    health: { probeAfterMs: 100, probeTimeoutMs: 300 },
  });
  const answer = await s.transport.fetch("/slow", { method: "GET", timeoutMs: 5_000 });
  expect(await answer.text()).toBe("slow");
  expect(s.replaced()).toBe(0);
});

Deno.test("a connection on which nothing arrives is replaced, failing everything on it", async () => {
  await using s = streamingServer({ health: { probeAfterMs: 200, probeTimeoutMs: 300 } });
  const watch = await s.transport.fetch("/stream", {
    method: "GET",
    timeoutMs: 5_000,
    stream: true,
  });
  const watching = drain(watch);
  const waiting = s.transport.fetch("/hang", { method: "GET", timeoutMs: 30_000 }).catch((e) => e);
  // A black hole: no FIN, no RST, nothing delivered either way.
  s.proxy.blackhole();
  const started = performance.now();
  // The watch on the replaced connection ends at once instead of waiting on a dead socket, and
  // the request waiting there with it, long before its own deadline.
  expect(await within(5_000, watching)).toBe("NetworkError");
  const failed = await waiting;
  expect(failed).toBeInstanceOf(NetworkError);
  expect(failed.failure).toBe("timeout");
  expect(failed.message).toMatch(
    /^no answer from http:\/\/127\.0\.0\.1:\d+ within \d+ s: nothing at all arrived on the connection, not even an answer to \/livez, so it was replaced$/,
  );
  expect(performance.now() - started).toBeLessThan(5_000);
  expect(s.replaced()).toBe(1);
  expect(s.transport.health.unreachable()?.error.failure).toBe("timeout");
  // The next request goes out on a new connection, and an answer clears the record.
  s.proxy.unblock();
  const next = await s.transport.fetch("/livez", { method: "GET", timeoutMs: 5_000 });
  expect(await next.text()).toBe("ok");
  expect(s.transport.health.unreachable()).toBeUndefined();
});

Deno.test("watches go on connections of their own, so many each, closed with their last", async () => {
  await using s = streamingServer();
  const count = STREAMS_PER_CONNECTION * 2 + 3;
  // Started together, as a pool of informers starts its watches: each takes its place at once.
  const aborts = Array.from({ length: count }, () => new AbortController());
  const watches = await Promise.all(aborts.map((abort) =>
    s.transport.fetch("/stream", {
      method: "GET",
      timeoutMs: 5_000,
      stream: true,
      signal: abort.signal,
    })
  ));
  const draining = watches.map(drain);
  // The main connection, for requests, and three for the watches.
  expect(s.transport.connections).toBe(4);
  expect(await (await s.transport.fetch("/livez", { method: "GET", timeoutMs: 5_000 })).text())
    .toBe("ok");
  // The last connection's watches end: it is closed; the others keep theirs.
  for (const abort of aborts.slice(-3)) abort.abort();
  await Promise.all(draining.slice(-3));
  expect(s.transport.connections).toBe(3);
  for (const abort of aborts) abort.abort();
  expect(await Promise.all(draining)).toEqual(Array(count).fill("AbortError"));
  expect(s.transport.connections).toBe(1);
  expect(s.replaced()).toBe(0);
});

Deno.test("requests past what one connection carries wait off the wire, within their deadline", async () => {
  await using s = streamingServer({ slowMs: 200 });
  // More at once than the connection has streams: one stream stays free for the /livez that asks
  // after the connection, and the rest wait their turn, first come first served.
  const answers = await Promise.all(
    Array.from(
      { length: SERVER_STREAMS + 50 },
      () => s.transport.fetch("/slow", { method: "GET", timeoutMs: 30_000 }).then((r) => r.text()),
    ),
  );
  expect(new Set(answers)).toEqual(new Set(["slow"]));
  expect(s.slow.most).toBe(SERVER_STREAMS - 1);
  // Every stream held by a request that hangs: one more fails alone within its deadline, unsent.
  const abort = new AbortController();
  const hanging = Array.from(
    { length: SERVER_STREAMS - 1 },
    () =>
      s.transport.fetch("/hang", { method: "GET", timeoutMs: 30_000, signal: abort.signal })
        .catch((e) => e.name),
  );
  const late = await s.transport.fetch("/livez", { method: "GET", timeoutMs: 300 })
    .catch((e) => e);
  expect(late).toBeInstanceOf(NetworkError);
  expect(late.message).toMatch(
    /^no answer from http:\/\/127\.0\.0\.1:\d+ within 0\.3 s: every stream of the connection was taken by requests before it$/,
  );
  abort.abort();
  expect(new Set(await Promise.all(hanging))).toEqual(new Set(["AbortError"]));
  expect(await (await s.transport.fetch("/livez", { method: "GET", timeoutMs: 5_000 })).text())
    .toBe("ok");
});

Deno.test("a refused connection is named, with the address, and counts as unreachable", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const transport = new Transport({ ...base, server: `https://127.0.0.1:${port}` });
  try {
    const error = await transport.fetch("/version", { method: "GET", timeoutMs: 5_000 })
      .catch((e) => e);
    expect(error).toBeInstanceOf(NetworkError);
    expect(error.failure).toBe("refused");
    expect(error.message).toBe(
      `connection refused by 127.0.0.1:${port}: is the API server running, and is this its ` +
        `address and port?`,
    );
    expect(transport.health.unreachable()?.error).toBe(error);
  } finally {
    transport.close();
  }
});

/** Keeps the thread busy for `ms`, as a process frozen or starved in the middle of its work. */
function stall(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) { /* the thread is not ours */ }
}

/**
 * An HTTP server on a thread of its own, so it sees a request when it arrives even while this
 * thread stalls: resolves with its port and each request's path and arrival on the wall clock.
 */
async function serverOnItsOwnThread() {
  const code = `
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: ({ port }) => postMessage({ port }) }, (request) => {
      postMessage({ path: new URL(request.url).pathname, at: Date.now() });
      return new Response("{}");
    });
    self.onmessage = async () => { await server.shutdown(); postMessage({ closed: true }); };`;
  const worker = new Worker(URL.createObjectURL(new Blob([code], { type: "text/javascript" })), {
    type: "module",
  });
  const arrivals: { path: string; at: number }[] = [];
  const closed = Promise.withResolvers<void>();
  const port = await new Promise<number>((resolve) => {
    worker.onmessage = ({ data }) => {
      if (data.port) resolve(data.port);
      else if (data.closed) closed.resolve();
      else arrivals.push(data);
    };
  });
  return {
    port,
    arrivals,
    async [Symbol.asyncDispose]() {
      worker.postMessage("close");
      await closed.promise;
      worker.terminate();
    },
  };
}

Deno.test("a write never leaves after its fence shut, however the process stalls after the check", async () => {
  // Long enough that a busy machine delaying a thread now and then is not taken for a stall.
  const OPEN_MS = 1_000;
  await using server = await serverOnItsOwnThread();
  const transport = new Transport({ ...base, server: `http://127.0.0.1:${server.port}` });
  const stalls = {
    // The rest of the turn of the event loop that started the write goes on with other work.
    "later in the turn that started it": () => stall(OPEN_MS + 500),
    // The write is started and checked early in a turn whose answers then take long to handle.
    "in the same turn, handling answers": () => {
      Deno.readTextFile(import.meta.filename!).then(() => stall(OPEN_MS + 500));
      stall(50);
    },
  };
  try {
    // The connection is up, so nothing but the stall stands between a write and the server.
    await (await transport.fetch("/livez", { method: "GET", timeoutMs: 5_000 })).text();
    for (const [when, stallNow] of Object.entries(stalls)) {
      const shutAt = Date.now() + OPEN_MS;
      const open = performance.now() + OPEN_MS;
      const write = transport.fetch(`/write`, {
        method: "PATCH",
        body: "{}",
        timeoutMs: 5_000,
        beforeSend: () => {
          const left = open - performance.now();
          if (left <= 0) throw new NotLeaderError("the fence shut");
          return left;
        },
      }).then(() => "answered", (e) => e.name);
      for (let i = 0; i < 100; i++) await Promise.resolve();
      stallNow();
      // Refused, answered, or abandoned past its deadline: any is fine if it did not leave late.
      expect(["NotLeaderError", "answered", "NetworkError"]).toContain(await write);
      await (await transport.fetch("/livez", { method: "GET", timeoutMs: 5_000 })).text();
      const late = server.arrivals.filter((a) => a.path === "/write" && a.at >= shutAt);
      expect({ when, late: late.map((a) => `${a.at - shutAt} ms after the fence shut`) })
        .toEqual({ when, late: [] });
      server.arrivals.length = 0;
    }
  } finally {
    transport.close();
  }
});

Deno.test("the token goes as a bearer header; one that cannot is refused without being shown", async () => {
  const seen: (string | null)[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    seen.push(request.headers.get("authorization"));
    return new Response("ok");
  });
  const at = { ...base, server: `http://127.0.0.1:${server.addr.port}` };
  const good = new Transport({ ...at, token: "abc.DEF-1" });
  // A configuration made in code skips the kubeconfig's checks: the transport still guards.
  const bad = new Transport({ ...at, token: "abc\r\nX-Injected: secret" });
  try {
    const answer = await good.fetch("/x", {
      method: "GET",
      timeoutMs: 5_000,
      headers: { accept: "text/plain" },
    });
    expect(await answer.text()).toBe("ok");
    const refused = await bad.fetch("/x", { method: "GET", timeoutMs: 5_000 }).catch((e) => e);
    expect(refused.message).toMatch(/cannot go in an HTTP header; it is not shown/);
    expect(refused.message).not.toMatch(/abc|secret/);
    expect(seen).toEqual(["Bearer abc.DEF-1"]);
  } finally {
    good.close();
    bad.close();
    await server.shutdown();
  }
});
