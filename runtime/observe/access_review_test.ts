import { expect } from "expect";
import type { KubeClient } from "../../kube/client.ts";
import { AccessReviewer, MAX_QUESTION_BYTES, type Requester, TtlCache } from "./access_review.ts";
import { log } from "./logging.ts";

const MIB = 1024 * 1024;

/** A client whose SubjectAccessReviews are all answered `allowed`, counted. */
function allowingClient(): KubeClient & { asked: number } {
  const client = {
    asked: 0,
    create: (_: unknown, body: { spec: unknown }) => {
      client.asked++;
      return Promise.resolve({ spec: body.spec, status: { allowed: true } });
    },
  };
  return client as unknown as KubeClient & { asked: number };
}

const attributes = {
  resourceAttributes: { verb: "get", group: "", resource: "secrets", namespace: "n", name: "s" },
};

/** A requester of about `bytes` whose name is `name`: what a caller may claim in a review. */
function requester(name: string, bytes: number): Requester {
  return { username: name, groups: [name, "x".repeat(bytes)] };
}

function heapAfterGc(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("run with --v8-flags=--expose-gc (as deno task test does)");
  gc();
  return Deno.memoryUsage().heapUsed;
}

Deno.test("access reviews: the same question goes out once, and is then answered from the cache", async () => {
  const client = allowingClient();
  const reviewer = new AccessReviewer(client, { log: log("test") });
  const who = requester("alice", 10);
  const answers = await Promise.all(
    Array.from({ length: 5 }, () => reviewer.authorize(who, attributes)),
  );
  expect(answers).toEqual([true, true, true, true, true]);
  expect(await reviewer.authorize({ ...who }, attributes)).toBe(true);
  expect(client.asked).toBe(1);
  expect(await reviewer.authorize(requester("bob", 10), attributes)).toBe(true);
  expect(client.asked).toBe(2);
});

Deno.test("access reviews: a requester larger than the limit is answered no, and not asked about", async () => {
  const client = allowingClient();
  const reviewer = new AccessReviewer(client, { log: log("test") });
  expect(await reviewer.authorize(requester("mallory", MAX_QUESTION_BYTES), attributes)).toBe(
    false,
  );
  expect(client.asked).toBe(0);
  // Just within the limit: asked as usual.
  expect(await reviewer.authorize(requester("alice", MAX_QUESTION_BYTES - 200), attributes)).toBe(
    true,
  );
  expect(client.asked).toBe(1);
});

Deno.test("access reviews: what the caches keep does not grow with what callers claim", async () => {
  // 1024 cached answers (the cache's size) about requesters of 60 KiB each, all invented: the
  // caller's words would be 60 MiB if a cache kept them; their digests are 64 bytes each.
  const reviewer = new AccessReviewer(allowingClient(), {
    log: log("test"),
    budget: { qps: 1e6, burst: 1e6 },
  });
  const before = heapAfterGc();
  for (let i = 0; i < 1024; i++) {
    expect(await reviewer.authorize(requester(`caller-${i}`, 60 * 1024), attributes)).toBe(true);
  }
  const kept = heapAfterGc() - before;
  expect(kept).toBeLessThan(8 * MIB);
});

Deno.test("ttl cache: entries expire, and the oldest go beyond its size", () => {
  let now = 0;
  const cache = new TtlCache<number>(2, () => now);
  cache.set("a", 1, 10);
  cache.set("b", 2, 100);
  cache.set("c", 3, 100);
  expect([cache.get("a"), cache.get("b"), cache.get("c"), cache.length]).toEqual([
    undefined,
    2,
    3,
    2,
  ]);
  now = 100;
  expect(cache.get("b")).toBeUndefined();
});
