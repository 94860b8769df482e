/**
 * The answer to a Worker's synchronous call (a cache read), handed over in a growable
 * SharedArrayBuffer: the Worker waits on the flag at byte 0 (`Atomics.wait`) and reads the JSON
 * whose length is at byte 4 from byte 8. A message port would need the Worker's event loop, which
 * the waiting Worker does not run (receiveMessageOnPort saw the answer only about 1 ms later:
 * 16 ms per reconcile of the status aggregator, against 0.03 ms in-process).
 */

const HEADER = 8;
/** Reserved address space, not memory: pages are only touched as the buffer grows. */
const MAX_BYTES = 1024 * 2 ** 20;

/** A buffer for the answers of one Worker. */
export function answerBuffer(): SharedArrayBuffer {
  return new SharedArrayBuffer(64 * 1024, { maxByteLength: MAX_BYTES });
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Writes `answer` (JSON-able) into `shared`, growing it when needed; the caller sets the flag. */
export function writeAnswer(shared: SharedArrayBuffer, answer: unknown): void {
  let bytes = encoder.encode(JSON.stringify(answer) ?? "null");
  if (HEADER + bytes.length > MAX_BYTES) {
    bytes = encoder.encode(JSON.stringify({
      error: {
        name: "RangeError",
        message: `the answer (${bytes.length} bytes) is larger than ${MAX_BYTES} bytes`,
      },
    }));
  }
  if (HEADER + bytes.length > shared.byteLength) {
    shared.grow(Math.min(MAX_BYTES, Math.max(HEADER + bytes.length, shared.byteLength * 2)));
  }
  new Uint8Array(shared, HEADER, bytes.length).set(bytes);
  Atomics.store(new Int32Array(shared, 4, 1), 0, bytes.length);
}

/** Reads the answer `writeAnswer` left in `shared`. */
export function readAnswer(shared: SharedArrayBuffer): unknown {
  const length = Atomics.load(new Int32Array(shared, 4, 1), 0);
  // TextDecoder takes no shared memory: copy first.
  return JSON.parse(decoder.decode(new Uint8Array(shared, HEADER, length).slice()));
}
