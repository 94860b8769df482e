import { expect } from "expect";
import { MAX_READ_BYTES, MIN_READ_BYTES, ownedChunkReader, ownedChunks } from "./owned_chunks.ts";

/**
 * A byte stream made the way Deno makes a pipe's: 64 KiB per chunk, filled with `pieces` (as
 * much of the next as the reader's buffer takes); `asked` records the size of each read.
 */
function denoLikeStream(
  pieces: (string | Uint8Array)[],
  onCancel?: () => void,
  asked: number[] = [],
): ReadableStream<Uint8Array> {
  const encoded = pieces.map((piece) =>
    typeof piece === "string" ? new TextEncoder().encode(piece) : piece
  );
  return new ReadableStream({
    type: "bytes",
    autoAllocateChunkSize: 64 * 1024,
    pull(controller) {
      const view = controller.byobRequest!.view as Uint8Array;
      asked.push(view.byteLength);
      const next = encoded.shift();
      if (!next) {
        controller.close();
        return controller.byobRequest?.respond(0);
      }
      const part = next.subarray(0, view.byteLength);
      if (part.length < next.length) encoded.unshift(next.subarray(part.length));
      view.set(part);
      controller.byobRequest!.respond(part.length);
    },
    cancel: onCancel,
  });
}

Deno.test("chunks held past the next read keep their bytes: each is a copy", async () => {
  const reader = ownedChunkReader(denoLikeStream(["first", "second", "third"]));
  const held = [];
  for (let result = await reader.read(); !result.done; result = await reader.read()) {
    held.push(result.value);
  }
  expect(held.map((chunk) => new TextDecoder().decode(chunk))).toEqual([
    "first",
    "second",
    "third",
  ]);
  expect(held.map((chunk) => chunk.buffer.byteLength)).toEqual([5, 6, 5]);
});

Deno.test("a stream that is not a byte stream is read as its maker made it", async () => {
  const made = [new Uint8Array([1, 2]), new Uint8Array([3])];
  const chunks = [];
  for await (const chunk of ownedChunks(ReadableStream.from(made))) chunks.push(chunk);
  expect(chunks).toEqual(made);
});

Deno.test("cancel settles a read that waits, and leaving the loop cancels the stream", async () => {
  const silent = new ReadableStream<Uint8Array>({
    type: "bytes",
    pull: () => new Promise(() => {}),
  });
  const reader = ownedChunkReader(silent);
  const waiting = reader.read();
  await reader.cancel("stop");
  expect(await waiting).toEqual({ done: true, value: undefined });

  let cancelled = false;
  for await (const _ of ownedChunks(denoLikeStream(["a", "b"], () => cancelled = true))) break;
  expect(cancelled).toBe(true);
});

Deno.test("a read buffer as large as the stream is busy: grown by a burst, shrunk when quiet", async () => {
  const asked: number[] = [];
  const burst = new Uint8Array(300 * 1024).fill(7);
  const reader = ownedChunkReader(
    denoLikeStream(["bookmark", burst, ...Array(8).fill("x")], undefined, asked),
  );
  let bytes = 0;
  for (let result = await reader.read(); !result.done; result = await reader.read()) {
    bytes += result.value.byteLength;
    expect(result.value.buffer.byteLength).toBe(result.value.byteLength);
  }
  expect(bytes).toBe(8 + burst.length + 8);
  // Quiet at first; doubling to 64 KiB through the burst; halving back once it is over.
  expect(asked[0]).toBe(MIN_READ_BYTES);
  expect(Math.max(...asked)).toBe(MAX_READ_BYTES);
  expect(asked.at(-1)).toBe(MIN_READ_BYTES);
});
