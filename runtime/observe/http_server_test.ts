import { expect } from "expect";
import { createServingPki } from "../../testing/control_plane_pki.ts";
import { eventually } from "../../testing/eventually.ts";
import { HttpError } from "./http_error.ts";
import {
  HttpServer,
  type HttpServerOptions,
  type RequestContext,
  type ServerLimits,
} from "./http_server.ts";
import { log } from "./logging.ts";
import { Registry } from "./metrics.ts";
import { makeSelfSigned } from "./self_signed_certificate.ts";

const echo = {
  path: "/echo",
  methods: ["POST"],
  handle: async (_: Request, { body }: { body: () => Promise<Uint8Array<ArrayBuffer>> }) =>
    new Response(await body()),
};
/** Reads the body, then refuses it: what a review that is not one gets. */
const refuse = {
  path: "/refuse",
  methods: ["POST"],
  handle: async (_: Request, { body }: RequestContext): Promise<Response> => {
    await body();
    throw new HttpError(400, "not a review");
  },
};
const hello = {
  path: "/hello",
  methods: ["GET", "HEAD"],
  handle: () => new Response("hello"),
};

async function serving(
  limits: Partial<ServerLimits>,
  more: Partial<HttpServerOptions> = {},
): Promise<HttpServer & AsyncDisposable> {
  const server = new HttpServer({
    name: "test",
    bind: { hostname: "127.0.0.1", port: 0 },
    routes: [echo, refuse, hello],
    limits,
    log: log("test"),
    ...more,
  });
  await server.start();
  return Object.assign(server, { [Symbol.asyncDispose]: () => server.stop() });
}

/** Sends raw bytes and reads the answer until the server closes or `ms` pass. */
async function raw(port: number, text: string, ms = 5_000): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(new TextEncoder().encode(text));
  return await readAll(conn, ms);
}

async function readAll(conn: Deno.Conn, ms: number): Promise<string> {
  const chunks: string[] = [];
  const buffer = new Uint8Array(4096);
  const timer = setTimeout(() => conn.close(), ms);
  try {
    for (;;) {
      const n = await conn.read(buffer);
      if (n === null) break;
      chunks.push(new TextDecoder().decode(buffer.subarray(0, n)));
    }
  } catch {
    // closed by the timer
  } finally {
    clearTimeout(timer);
    try {
      conn.close();
    } catch {
      // closed already
    }
  }
  return chunks.join("");
}

Deno.test("routes: 404 for unknown paths, 405 with Allow for other methods", async () => {
  await using server = await serving({});
  const base = `http://127.0.0.1:${server.port}`;
  expect(await (await fetch(`${base}/hello`)).text()).toBe("hello");
  const missing = await fetch(`${base}/nowhere`);
  expect([missing.status, await missing.text()]).toEqual([404, "not found\n"]);
  for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
    const refused = await fetch(`${base}/hello`, {
      method,
      body: method === "DELETE" ? undefined : "",
    });
    expect(refused.status).toBe(405);
    expect(refused.headers.get("allow")).toBe("GET, HEAD");
    await refused.body?.cancel();
  }
});

Deno.test("a declared length over the limit is refused before a byte is read", async () => {
  await using server = await serving({ maxBodyBytes: 1024, maxBufferedBytes: 4096 });
  // Declares 10 MB and sends 11 bytes: answered at once, nothing waited for.
  const answer = await raw(
    server.port!,
    "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\nhello world",
  );
  expect(answer).toMatch(/^HTTP\/1\.1 413/);
  expect(answer).toContain("a body of at most 1024 bytes, not 10000000");
  // Within the limit, the body comes back.
  const ok = await fetch(`http://127.0.0.1:${server.port}/echo`, { method: "POST", body: "abc" });
  expect(await ok.text()).toBe("abc");
});

Deno.test("a body without a length is read as it comes, and cut off at the limit", async () => {
  await using server = await serving({ maxBodyBytes: 1024, maxBufferedBytes: 4096 });
  const chunk = "x".repeat(600);
  const answer = await raw(
    server.port!,
    "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
      `258\r\n${chunk}\r\n258\r\n${chunk}\r\n0\r\n\r\n`,
  );
  expect(answer).toMatch(/^HTTP\/1\.1 413/);
  const small = await raw(
    server.port!,
    "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
      "3\r\nabc\r\n0\r\n\r\n",
  );
  expect(small).toMatch(/^HTTP\/1\.1 200/);
  expect(small.endsWith("abc")).toBe(true);
});

Deno.test("a body trickled in small pieces holds its bytes, not a buffer per piece", async () => {
  await using server = await serving({ maxBodyBytes: 4096, maxBufferedBytes: 4096 });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port! });
  const send = (text: string) => conn.write(new TextEncoder().encode(text));
  await send(
    "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
  );
  const before = Deno.memoryUsage().external;
  // Each piece arrives on its own: the server reads 200 times for 200 bytes. Deno's reader gave
  // every read a buffer of 64 KiB, held with its byte until the body ended (12.5 MiB for 200
  // bytes, under a limit of 4096).
  for (let i = 0; i < 200; i++) {
    await send("1\r\nx\r\n");
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  const held = Deno.memoryUsage().external - before;
  await send("0\r\n\r\n");
  const answer = await readAll(conn, 5_000);
  expect(answer).toMatch(/^HTTP\/1\.1 200/);
  expect(answer.endsWith("x".repeat(200))).toBe(true);
  expect(held).toBeLessThan(2 * 2 ** 20);
});

Deno.test("bodies held at once are bounded in all, and requests in flight are too", async () => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => release = resolve);
  const slow = {
    path: "/slow",
    methods: ["POST"],
    handle: async (_: Request, { body }: { body: () => Promise<Uint8Array<ArrayBuffer>> }) => {
      await body();
      await gate;
      return new Response("done");
    },
  };
  await using server = await serving(
    { maxBodyBytes: 1000, maxBufferedBytes: 1500, maxConcurrentRequests: 3 },
    { routes: [slow] },
  );
  const url = `http://127.0.0.1:${server.port}/slow`;
  const first = fetch(url, { method: "POST", body: "a".repeat(1000) });
  await eventually(() => expect(server.statuses.size).toBe(0)); // in flight
  await new Promise((resolve) => setTimeout(resolve, 200));
  // Another 1000 bytes would pass the 1500 held in all.
  const second = await fetch(url, { method: "POST", body: "b".repeat(1000) });
  expect(second.status).toBe(503);
  expect(second.headers.get("retry-after")).toBe("1");
  await second.body?.cancel();
  const third = fetch(url, { method: "POST", body: "c" });
  const fourth = fetch(url, { method: "POST", body: "d" });
  await new Promise((resolve) => setTimeout(resolve, 200));
  // Three in flight (first, third, fourth): a fifth is turned away at once.
  const fifth = await fetch(url, { method: "POST", body: "e" });
  expect(fifth.status).toBe(503);
  await fifth.body?.cancel();
  release();
  for (const response of await Promise.all([first, third, fourth])) {
    expect(await response.text()).toBe("done");
  }
});

Deno.test("the front: connections that never speak, dawdle or idle are closed", async () => {
  await using server = await serving({ handshakeMs: 300, requestMs: 600, idleMs: 900 });
  const port = server.port!;
  // Never a byte: closed after the handshake deadline.
  const silent = await Deno.connect({ hostname: "127.0.0.1", port });
  expect(await readAll(silent, 5_000)).toBe("");
  // Half a request, then nothing: the client waits too long; closed without an answer.
  const half = await Deno.connect({ hostname: "127.0.0.1", port });
  await half.write(new TextEncoder().encode("GET /hello HTTP/1.1\r\nHost: x\r\n"));
  expect(await readAll(half, 5_000)).toBe("");
  // A finished request on a keep-alive connection, then silence: closed when idle.
  const idle = await Deno.connect({ hostname: "127.0.0.1", port });
  await idle.write(new TextEncoder().encode("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"));
  expect(await readAll(idle, 5_000)).toMatch(/^HTTP\/1\.1 200[\s\S]*hello$/);
  expect(server.connections).toMatchObject({
    handshakeTimeouts: 1,
    requestTimeouts: 1,
    idleTimeouts: 1,
    open: 0,
  });
});

Deno.test("the front: at most so many connections, and per caller", async () => {
  await using server = await serving({ maxConnections: 5, maxConnectionsPerCaller: 3 });
  const port = server.port!;
  const held = await Promise.all(
    [0, 1, 2, 3].map(() => Deno.connect({ hostname: "127.0.0.1", port })),
  );
  await eventually(() => expect(server.connections.open).toBe(3));
  expect(server.connections.refused).toBe(1);
  // The one refused was closed at once.
  const closed = await Promise.all(held.map((c) => readAll(c, 300)));
  expect(closed.filter((c) => c === "")).toHaveLength(4);
  await eventually(() => expect(server.connections.open).toBe(0));
  expect(await (await fetch(`http://127.0.0.1:${port}/hello`)).text()).toBe("hello");
});

Deno.test("HTTPS: the handshake counts, a new certificate is taken, stop ends idle connections", async () => {
  const pki = await createServingPki();
  let certificate = await pki.issue();
  await using server = await serving({ handshakeMs: 1_000 }, {
    tls: { certificate: () => Promise.resolve(certificate), reloadMs: 100 },
  });
  const client = Deno.createHttpClient({ caCerts: [pki.ca.cert] });
  try {
    const url = `https://127.0.0.1:${server.port}/hello`;
    expect(await (await fetch(url, { client })).text()).toBe("hello");
    // The start of a ClientHello (a record of 256 bytes, one sent) never finishes a handshake.
    const stalled = await Deno.connect({ hostname: "127.0.0.1", port: server.port! });
    await stalled.write(new Uint8Array([0x16, 0x03, 0x01, 0x01, 0x00, 0x01]));
    await readAll(stalled, 5_000);
    expect(server.connections.handshakeTimeouts).toBe(1);
    certificate = await pki.issue();
    await eventually(() => expect(server.rotations).toBe(1));
    expect(await (await fetch(url, { client })).text()).toBe("hello");
  } finally {
    client.close();
  }
});

Deno.test("HTTPS: when the certificate served now expires is a gauge, and follows a rotation", async () => {
  const DAY_MS = 24 * 3600_000;
  const registry = new Registry();
  let certificate = await makeSelfSigned({ dns: ["localhost"], ips: ["127.0.0.1"] }, 30 * DAY_MS);
  const expiry = () =>
    Number(
      registry.render().match(
        /^serving_certificate_expiration_timestamp_seconds\{server="test"\} (\S+)$/m,
      )?.[1],
    );
  await using server = await serving({}, {
    registry,
    tls: { certificate: () => Promise.resolve(certificate), reloadMs: 100 },
  });
  const days = (seconds: number) => (seconds * 1000 - Date.now()) / DAY_MS;
  // UTCTime has whole seconds: within a few seconds of 30 days, never the 90 of the next one.
  expect(days(expiry())).toBeGreaterThan(29.99);
  expect(days(expiry())).toBeLessThanOrEqual(30);
  certificate = await makeSelfSigned({ dns: ["localhost"], ips: ["127.0.0.1"] }, 90 * DAY_MS);
  await eventually(() => expect(server.rotations).toBe(1));
  expect(days(expiry())).toBeGreaterThan(89.99);
  // A plain HTTP server has no certificate, and says nothing of one.
  const plain = new Registry();
  await using _plain = await serving({}, { name: "plain", registry: plain });
  expect(plain.render()).not.toContain("serving_certificate");
});

Deno.test("every answer of a route is observed by the route's path, with its status", async () => {
  const seen: string[] = [];
  let open = 0;
  await using server = await serving({ maxBodyBytes: 64, maxBufferedBytes: 64 }, {
    routes: [echo, refuse, hello, {
      path: "/readyz/",
      methods: ["GET"],
      handle: () => new Response("ok"),
    }],
    observe: (route) => {
      open++;
      return (status) => {
        open--;
        seen.push(`${route} ${status}`);
      };
    },
  });
  const url = (path: string) => `http://127.0.0.1:${server.port}${path}`;
  const send = async (path: string, init: RequestInit = {}) =>
    await (await fetch(url(path), init)).body?.cancel();
  await send("/echo", { method: "POST", body: "hi" });
  await send("/refuse", { method: "POST", body: "hi" });
  await send("/hello?x=1");
  await send("/hello", { method: "DELETE" });
  await send("/echo", { method: "POST", body: "x".repeat(100) });
  await send("/readyz/one");
  await send("/readyz/two");
  await send("/nowhere");
  await send("/nowhere/else/entirely");
  expect(seen).toEqual([
    "/echo 200",
    "/refuse 400",
    "/hello 200",
    "/hello 405",
    "/echo 413",
    // A prefix route by its prefix: callers' paths never become names.
    "/readyz/ 200",
    "/readyz/ 200",
  ]);
  expect(open).toBe(0);
});

Deno.test("stopping does not wait for idle keep-alive connections", async () => {
  // Long deadlines: only stop() can end the connection in this test's time.
  const server = await serving({ idleMs: 600_000, requestMs: 600_000 });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port! });
  await conn.write(new TextEncoder().encode("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"));
  const answer = readAll(conn, 600_000);
  await eventually(() => expect(server.statuses.get(200)).toBe(1));
  const stopped = await Promise.race([
    server.stop().then(() => "stopped"),
    new Promise((resolve) => setTimeout(() => resolve("still waiting"), 60_000)),
  ]);
  expect(stopped).toBe("stopped");
  expect(await answer).toMatch(/hello$/);
  expect(server.connections.open).toBe(0);
});

Deno.test("a thousand unknown paths write one warning line", async () => {
  const lines: string[] = [];
  const record = (message: string) => lines.push(message);
  const recorder = {
    warn: record,
    info: record,
    error: record,
    debug: record,
  } as unknown as ReturnType<typeof log>;
  await using server = await serving({}, { log: recorder });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port! });
  // Pipelined on one connection: a flood of paths, each different.
  const requests = Array.from(
    { length: 1000 },
    (_, i) => `GET /probe-${i}-${"x".repeat(i % 50)} HTTP/1.1\r\nHost: x\r\n\r\n`,
  ).join("");
  await conn.write(new TextEncoder().encode(requests));
  await eventually(() => expect(server.statuses.get(404)).toBe(1000));
  conn.close();
  expect(lines).toEqual(["{server}: 404 for {path} from {caller}"]);
});

Deno.test("a half-sent request does not hold up stopping", async () => {
  // Its deadline would end it (the front keeps them while stopping); stopping ends it first.
  const server = await serving({ requestMs: 600_000, idleMs: 600_000 });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port! });
  await conn.write(new TextEncoder().encode("GET /hello HTTP/1.1\r\nHost: x\r\n"));
  await eventually(() => expect(server.connections.open).toBe(1));
  await server.stop();
  expect(server.connections.open).toBe(0);
  expect(await conn.read(new Uint8Array(1))).toBe(null);
  conn.close();
});

/** Reads until the server closes the connection (`true`), or until `ms` pass (`false`). */
async function untilClosed(conn: Deno.Conn, ms: number): Promise<[string, boolean]> {
  const chunks: string[] = [];
  const buffer = new Uint8Array(4096);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    conn.close();
  }, ms);
  try {
    for (;;) {
      const n = await conn.read(buffer);
      if (n === null) break;
      chunks.push(new TextDecoder().decode(buffer.subarray(0, n)));
    }
  } catch {
    // closed by the timer, or reset
  } finally {
    clearTimeout(timer);
  }
  if (!timedOut) conn.close();
  return [chunks.join(""), !timedOut];
}

Deno.test("a refusal that leaves a declared body unread ends its connection", async () => {
  // Long deadlines: only the refusal can end these connections within the test's time.
  await using server = await serving({ maxBodyBytes: 1024, idleMs: 600_000, requestMs: 600_000 });
  const shapes = [
    // An unknown path, a body of 100 bytes declared and never sent.
    "POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n",
    // A method not served, a chunked body that never ends.
    "PUT /hello HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
    // A GET with a body (Deno gives it as null): refused, and not read either.
    "GET /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n",
  ];
  for (const shape of shapes) {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port! });
    await conn.write(new TextEncoder().encode(shape));
    const [answer, closedByServer] = await untilClosed(conn, 60_000);
    expect(answer).toMatch(/^HTTP\/1\.1 40[45]/);
    expect(answer.toLowerCase()).toContain("connection: close");
    expect(closedByServer).toBe(true);
  }
});

Deno.test("a refusal after the body was read, or without one, keeps the connection", async () => {
  await using server = await serving({ maxBodyBytes: 1024, maxBufferedBytes: 4096 });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port! });
  // Pipelined: a refused review (body read), an unknown path without a body, then one that ends.
  await conn.write(
    new TextEncoder().encode(
      "POST /refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}" +
        "GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n" +
        "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    ),
  );
  const [answer] = await untilClosed(conn, 10_000);
  expect(answer.match(/HTTP\/1\.1 \d+/g)).toEqual(["HTTP/1.1 400", "HTTP/1.1 404", "HTTP/1.1 200"]);
});

Deno.test("busy, try again: over HTTP/2 the caller's other requests go on", async () => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => release = resolve);
  const hang = {
    path: "/hang",
    methods: ["GET"],
    handle: async () => {
      await gate;
      return new Response("done");
    },
  };
  await using server = await serving(
    { maxBodyBytes: 1024, maxBufferedBytes: 4096, maxConcurrentRequests: 1 },
    { routes: [hang, echo] },
  );
  // One HTTP/2 connection (prior knowledge) carries every request.
  const client = Deno.createHttpClient({ http1: false, http2: true });
  try {
    const hanging = fetch(`http://127.0.0.1:${server.port}/hang`, { client });
    await eventually(() => expect(server.connections.open).toBe(1));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const busy = await fetch(`http://127.0.0.1:${server.port}/echo`, {
      method: "POST",
      body: "abc",
      client,
    });
    expect(busy.status).toBe(503);
    await busy.body?.cancel();
    // Long enough for the front to have closed the connection, had it been asked to.
    await new Promise((resolve) => setTimeout(resolve, 500));
    release();
    expect(await (await hanging).text()).toBe("done");
    expect(server.connections.open).toBe(1);
  } finally {
    client.close();
  }
});

Deno.test("refused requests leave nothing behind once answered", async () => {
  // Each refused review read a body under a deadline; a deadline that outlived its request kept
  // the request's closures (a few KiB each) alive for `requestMs` after the answer.
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("run with --v8-flags=--expose-gc (as deno task test does)");
  await using server = await serving({
    maxBodyBytes: 1024,
    maxBufferedBytes: 64 * 1024,
    requestMs: 600_000,
  });
  const client = Deno.createHttpClient({ http2: false });
  const url = `http://127.0.0.1:${server.port}/refuse`;
  const flood = async (count: number) => {
    await Promise.all(Array.from({ length: 10 }, async () => {
      for (let i = 0; i < count / 10; i++) {
        const response = await fetch(url, { method: "POST", body: "{}", client });
        await response.body?.cancel();
      }
    }));
  };
  await flood(200);
  gc();
  const before = Deno.memoryUsage().heapUsed;
  await flood(4_000);
  gc();
  const kept = Deno.memoryUsage().heapUsed - before;
  client.close();
  expect(server.statuses.get(400)).toBe(4_200);
  expect(kept).toBeLessThan(2 * 2 ** 20);
});
