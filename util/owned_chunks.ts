/**
 * Reads a byte stream in chunks that own exactly their bytes. Deno's readers of a socket, a pipe
 * or a response body give every chunk a new 64 KiB buffer, and a chunk of a few bytes keeps all of
 * it alive until V8 collects the chunk: a busy watch or plugin pipe held megabytes of native
 * memory that way (bench/README.md, "Streams that own their chunks"). Here each
 * stream reads into one buffer of its own and hands on a copy of what came. The buffer is as large
 * as the stream is busy: a read that fills it doubles it for the next, up to Deno's 64 KiB, and a
 * read that fills a quarter of it or less halves it, down to 4 KiB. A stream that waits (a watch,
 * most of its life) holds the least while it waits, which matters most where an install keeps a
 * watch per kind and namespace.
 */

/** The most one read may bring: Deno's own chunk size. */
export const MAX_READ_BYTES = 64 * 1024;

/** The least: what a quiet stream's pending read holds (a bookmark or a small object fits). */
export const MIN_READ_BYTES = 4 * 1024;

/** The two calls of a stream reader that the callers use. */
export interface ChunkReader {
  /** The next chunk, or `done` at the stream's end. */
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  /** Ends the stream; a pending `read` settles at once. */
  cancel(reason?: unknown): Promise<void>;
}

/**
 * A reader of `stream` whose chunks own their bytes. A stream that is not a byte stream (one a
 * program made with `new ReadableStream`) is read as it is: its chunks are its maker's.
 */
export function ownedChunkReader(stream: ReadableStream<Uint8Array>): ChunkReader {
  let reader: ReadableStreamBYOBReader;
  try {
    reader = stream.getReader({ mode: "byob" });
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
    return stream.getReader();
  }
  let buffer = new Uint8Array(MIN_READ_BYTES);
  return {
    async read() {
      const { done, value } = await reader.read(buffer);
      if (done) return { done: true, value: undefined };
      const size = value.buffer.byteLength;
      const chunk = value.slice();
      // The read moved the buffer into `value`: take it back for the next read, or a new size.
      buffer = value.byteLength === size && size < MAX_READ_BYTES
        ? new Uint8Array(size * 2)
        : value.byteLength <= size / 4 && size > MIN_READ_BYTES
        ? new Uint8Array(size / 2)
        : new Uint8Array(value.buffer);
      return { done: false, value: chunk };
    },
    cancel: (reason) => reader.cancel(reason),
  };
}

/** The chunks of `stream`, each owning its bytes; the stream is cancelled when the loop leaves. */
export async function* ownedChunks(stream: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = ownedChunkReader(stream);
  try {
    for (let next = await reader.read(); !next.done; next = await reader.read()) yield next.value;
  } finally {
    // After the end this does nothing; after a break or an error it lets the source go.
    await reader.cancel().catch(() => {});
  }
}
