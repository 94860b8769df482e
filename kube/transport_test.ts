import { expect } from "expect";
import { NetworkError } from "./network_error.ts";
import { Transport } from "./transport.ts";

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

/** A plain-HTTP server whose `/stream` sends a line every 50 ms forever and `/hang` never answers. */
function streamingServer() {
  const hang = Promise.withResolvers<void>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    if (new URL(request.url).pathname === "/hang") return hang.promise.then(() => new Response());
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
  const transport = new Transport({
    ...base,
    server: `http://127.0.0.1:${server.addr.port}`,
  });
  return {
    transport,
    async [Symbol.asyncDispose]() {
      hang.resolve();
      transport.close();
      // A stream that failed to stop would hold a graceful shutdown forever; the test says why.
      await within(2_000, server.shutdown());
    },
  };
}

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

Deno.test("a request without an answer replaces the connection and fails everything on it", async () => {
  await using s = streamingServer();
  const watch = await s.transport.fetch("/stream", {
    method: "GET",
    timeoutMs: 5_000,
    stream: true,
  });
  const watching = drain(watch);
  const silent = await s.transport.fetch("/hang", { method: "GET", timeoutMs: 200 }).catch((e) =>
    e
  );
  expect(silent).toBeInstanceOf(NetworkError);
  expect(silent.failure).toBe("timeout");
  // The watch on the replaced connection ends at once instead of waiting on a dead socket.
  expect(await within(2_000, watching)).toBe("NetworkError");
  expect(s.transport.health.unreachable()?.error.failure).toBe("timeout");
  // The next request goes out on a new connection, and an answer clears the record.
  const next = await s.transport.fetch("/stream", {
    method: "GET",
    timeoutMs: 5_000,
    stream: true,
  });
  await next.body!.cancel();
  expect(s.transport.health.unreachable()).toBeUndefined();
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
