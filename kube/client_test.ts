/**
 * Client behaviour under network conditions a real API server produces only under load
 * (429s, 5xx, hangs), played by a loopback server. API semantics are tested in tests/client_test.ts.
 */
import { expect } from "expect";
import { KubeClient } from "./client.ts";
import { ApiError } from "./errors.ts";
import { CONFIG_MAP } from "./kinds.ts";
import { NetworkError } from "./network_error.ts";

interface Seen {
  method: string;
  authorization: string | null;
}

type Handler = (request: Request, attempt: number) => Response | Promise<Response>;

async function withServer(
  handler: Handler,
  fn: (client: KubeClient, requests: () => Seen[]) => Promise<void>,
): Promise<void> {
  const seen: Seen[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (request) => {
      // A Request's headers cannot be read after it is answered: keep what the tests check.
      seen.push({ method: request.method, authorization: request.headers.get("authorization") });
      return handler(request, seen.length);
    },
  );
  const client = new KubeClient({
    server: `http://127.0.0.1:${server.addr.port}`,
    token: "secret-token",
    namespace: "default",
    source: "test",
  });
  try {
    await fn(client, () => seen);
  } finally {
    client.close();
    await server.shutdown();
  }
}

const ok = () =>
  Response.json({ kind: "ConfigMapList", metadata: { resourceVersion: "1" }, items: [] });

Deno.test("a plain-text 429 is retried after Retry-After, for writes too", async () => {
  await withServer(
    (_, attempt) =>
      attempt === 1
        ? new Response("Too many requests, please try again later.", {
          status: 429,
          headers: { "retry-after": "1" },
        })
        : Response.json({ metadata: { name: "x" } }, { status: 201 }),
    async (client, requests) => {
      const started = Date.now();
      await client.create(CONFIG_MAP, { metadata: { name: "x" } });
      expect(requests()).toHaveLength(2);
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);
      expect(client.requests.samples()).toEqual(expect.arrayContaining([
        expect.objectContaining({ code: 429, method: "POST", count: 1 }),
        expect.objectContaining({ code: 201, method: "POST", count: 1 }),
      ]));
    },
  );
});

Deno.test("a 503 is retried for GET but not for POST, which may have happened", async () => {
  await withServer(
    (request, attempt) =>
      request.method === "GET" && attempt > 2 ? ok() : new Response("unavailable", { status: 503 }),
    async (client, requests) => {
      const post = await client.create(CONFIG_MAP, { metadata: { name: "x" } }).catch((e) => e);
      expect(post).toBeInstanceOf(ApiError);
      expect(post.code).toBe(503);
      expect(requests()).toHaveLength(1);
      await client.list(CONFIG_MAP);
      expect(requests()).toHaveLength(3);
    },
  );
});

Deno.test("retries are bounded", async () => {
  await withServer(
    () => new Response("{}", { status: 500 }),
    async (client, requests) => {
      const bounded = new KubeClient(client.transport.config, { maxRetries: 2 });
      try {
        const error = await bounded.list(CONFIG_MAP).catch((e) => e);
        expect(error.code).toBe(500);
        expect(requests()).toHaveLength(3);
      } finally {
        bounded.close();
      }
    },
  );
});

Deno.test("a hanging request times out, retries included; an aborted one stops at once", async () => {
  const hang = Promise.withResolvers<void>();
  await withServer(
    () => hang.promise.then(ok),
    async (client) => {
      try {
        const started = performance.now();
        const timedOut = await client.get(CONFIG_MAP, "x", { timeoutMs: 300 }).catch((e) => e);
        expect(timedOut).toBeInstanceOf(NetworkError);
        expect(timedOut.failure).toBe("timeout");
        expect(timedOut.message).toMatch(/^no answer from http:\/\/127\.0\.0\.1:\d+ within/);
        // The deadline is the caller's: retries fit inside it rather than multiplying it.
        expect(performance.now() - started).toBeLessThan(2_000);
        expect(client.transport.health.unreachable()?.error.failure).toBe("timeout");
        const abort = new AbortController();
        const pending = client.get(CONFIG_MAP, "x", { signal: abort.signal }).catch((e) => e);
        abort.abort();
        expect((await pending).name).toBe("AbortError");
      } finally {
        hang.resolve();
      }
    },
  );
});

Deno.test("the bearer token is sent and never appears in errors", async () => {
  await withServer(
    () =>
      Response.json({ kind: "Status", code: 401, reason: "Unauthorized", message: "nope" }, {
        status: 401,
      }),
    async (client, requests) => {
      const error = await client.list(CONFIG_MAP).catch((e) => e);
      expect(error.code).toBe(401);
      expect(requests()[0].authorization).toBe("Bearer secret-token");
      expect(String(error)).not.toContain("secret-token");
      expect(JSON.stringify(error)).not.toContain("secret-token");
    },
  );
});

Deno.test("a budget spent waiting for the rate limit fails that request alone, unsent", async () => {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, ok);
  // One request a second, one at once: the second waits about a second for its turn.
  const client = new KubeClient({
    server: `http://127.0.0.1:${server.addr.port}`,
    namespace: "default",
    source: "test",
  }, { rateLimit: { qps: 1, burst: 1 } });
  let replaced = 0;
  const reset = client.transport.reset.bind(client.transport);
  client.transport.reset = (reason: string) => {
    replaced++;
    reset(reason);
  };
  try {
    await client.list(CONFIG_MAP, { namespace: "default" });
    const late = await client.list(CONFIG_MAP, { namespace: "default", timeoutMs: 200 })
      .catch((e) => e);
    expect(late).toBeInstanceOf(NetworkError);
    expect(late.message).toMatch(/spent waiting for the client-side rate limit/);
    // The connection is not blamed: nothing failed on it, nothing was replaced.
    expect(client.transport.health.unreachable()).toBeUndefined();
    expect(replaced).toBe(0);
  } finally {
    client.close();
    await server.shutdown();
  }
});
