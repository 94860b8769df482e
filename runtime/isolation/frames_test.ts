import { expect } from "expect";
import { FrameError, frameOf, readFrames } from "./frames.ts";

/** A stream of `bytes`, cut into chunks of `size`. */
function streamOf(bytes: Uint8Array, size: number): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, at += size));
    },
  });
}

async function all(stream: ReadableStream<Uint8Array>): Promise<unknown[]> {
  const values = [];
  for await (const value of readFrames(stream)) values.push(value);
  return values;
}

Deno.test("frames carry what structured clone carries, however the stream is cut", async () => {
  const values = [
    { type: "sync", args: [undefined, "name"] },
    { error: new TypeError("boom"), at: new Date(0) },
    "x".repeat(70_000),
  ];
  const bytes = new Uint8Array(values.flatMap((v) => [...frameOf(v)]));
  for (const size of [1, 7, 4096, bytes.length]) {
    const got = await all(streamOf(bytes, size));
    expect(got[0]).toEqual(values[0]);
    expect(got[1]).toMatchObject({ at: new Date(0) });
    expect((got[1] as { error: Error }).error).toBeInstanceOf(TypeError);
    expect(got[2]).toBe(values[2]);
  }
});

Deno.test("what is not frames (a plugin's print on stdout) is an error, not a message", async () => {
  const printed = new TextEncoder().encode("hello from a plugin\n");
  await expect(all(streamOf(printed, 5))).rejects.toBeInstanceOf(FrameError);
  const cut = frameOf({ a: 1 }).slice(0, 9);
  await expect(all(streamOf(cut, 9))).rejects.toThrow(/ended inside a frame/);
});
