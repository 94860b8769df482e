/**
 * Messages over a byte stream (the pipes between the operator and a plugin host process): each
 * frame is a two-byte mark, a four-byte length and the value in V8's structured-clone format
 * (`node:v8` serialize), so what crossed between isolates before (undefined in an array, an Error,
 * a Date) crosses unchanged. A stream that is not frames (a plugin that wrote to stdout) is an
 * error, never a message read wrong.
 */
import { deserialize, serialize } from "node:v8";
import { ownedChunks } from "../../util/owned_chunks.ts";

const MARK = 0x7e_5f;
const HEAD = 6;
/** Past this a length is not ours: the stream is not frames. */
const MAX_FRAME = 1024 * 2 ** 20;

/** The stream carried something that is not a frame. */
export class FrameError extends Error {
  /** Always `FrameError`. */
  override readonly name = "FrameError";
}

/** `value` as one frame. */
export function frameOf(value: unknown): Uint8Array {
  const body = serialize(value);
  const frame = new Uint8Array(HEAD + body.length);
  const view = new DataView(frame.buffer);
  view.setUint16(0, MARK);
  view.setUint32(2, body.length);
  frame.set(body, HEAD);
  return frame;
}

/** The values in `stream`'s frames, in order; throws FrameError where it is not frames. */
export async function* readFrames(stream: ReadableStream<Uint8Array>): AsyncGenerator<unknown> {
  let buffered: Uint8Array = new Uint8Array(0);
  for await (const chunk of ownedChunks(stream)) {
    buffered = buffered.length ? concat(buffered, chunk) : chunk;
    while (buffered.length >= HEAD) {
      const view = new DataView(buffered.buffer, buffered.byteOffset, HEAD);
      const length = view.getUint32(2);
      if (view.getUint16(0) !== MARK || length > MAX_FRAME) {
        const text = new TextDecoder().decode(buffered.subarray(0, 60));
        throw new FrameError(`not a frame: ${JSON.stringify(text)}`);
      }
      if (buffered.length < HEAD + length) break;
      let value: unknown;
      try {
        value = deserialize(buffered.subarray(HEAD, HEAD + length));
      } catch (error) {
        throw new FrameError(`a frame that does not decode: ${(error as Error).message}`);
      }
      buffered = buffered.subarray(HEAD + length);
      yield value;
    }
  }
  if (buffered.length) throw new FrameError(`the stream ended inside a frame`);
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const joined = new Uint8Array(a.length + b.length);
  joined.set(a);
  joined.set(b, a.length);
  return joined;
}
