import { expect } from "expect";
import fc from "fast-check";
import { ApiError } from "./errors.ts";
import { ndjsonLines, watchEvents } from "./watch.ts";

async function* chunksOf(bytes: Uint8Array, cuts: number[]): AsyncGenerator<Uint8Array> {
  let start = 0;
  for (const cut of [...new Set(cuts)].sort((a, b) => a - b)) {
    if (cut <= start || cut >= bytes.length) continue;
    yield bytes.slice(start, cut);
    start = cut;
  }
  yield bytes.slice(start);
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

Deno.test("ndjsonLines: any chunking of any lines gives back the same lines", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.string({ unit: "grapheme", minLength: 1 }).filter((s) =>
          !s.includes("\n") && s.trim() === s && s !== ""
        ),
        { maxLength: 8 },
      ),
      fc.array(fc.nat(400), { maxLength: 10 }),
      async (lines, cuts) => {
        const bytes = new TextEncoder().encode(lines.map((l) => l + "\n").join(""));
        expect(await collect(ndjsonLines(chunksOf(bytes, cuts)))).toEqual(lines);
      },
    ),
  );
});

Deno.test("ndjsonLines: a last line without newline and blank lines", async () => {
  const bytes = new TextEncoder().encode('{"a":1}\n\n{"b":"é"}');
  expect(await collect(ndjsonLines(chunksOf(bytes, [3, 9, 14])))).toEqual(['{"a":1}', '{"b":"é"}']);
});

Deno.test("watchEvents: bookmarks keep their annotations; ERROR 410 becomes ApiError", async () => {
  const body = [
    { type: "ADDED", object: { metadata: { name: "a", resourceVersion: "5" } } },
    {
      type: "BOOKMARK",
      object: {
        metadata: { resourceVersion: "7", annotations: { "k8s.io/initial-events-end": "true" } },
      },
    },
    {
      type: "ERROR",
      object: {
        kind: "Status",
        code: 410,
        reason: "Expired",
        message: "too old resource version: 1 (7)",
      },
    },
  ].map((e) => JSON.stringify(e)).join("\n") + "\n";
  const seen: unknown[] = [];
  const error = await (async () => {
    for await (const event of watchEvents(new Response(body))) seen.push(event);
  })().catch((e) => e);
  expect(seen).toHaveLength(2);
  expect(seen[1]).toMatchObject({
    type: "BOOKMARK",
    object: { metadata: { annotations: { "k8s.io/initial-events-end": "true" } } },
  });
  expect(error).toBeInstanceOf(ApiError);
  expect(error.code).toBe(410);
  expect(error.reason).toBe("Expired");
});
