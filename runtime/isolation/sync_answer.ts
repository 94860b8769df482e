/**
 * The answer to a Worker's synchronous call (a cache read), handed over in a growable
 * SharedArrayBuffer. Its header is three 32-bit words: a flag the Worker waits on
 * (`Atomics.wait`), the length of the JSON that follows the header, and the number of the call it
 * answers; the Worker takes an answer only when that number is its call's, so an answer can never
 * be read for another. A message port would need the Worker's event loop, which the waiting Worker
 * does not run (`receiveMessageOnPort` sees the answer only late, and a reconcile that reads many
 * times pays that each time: bench/README.md, "Isolation: `deno task bench:isolation`").
 */

const FLAG = 0;
const LENGTH = 1;
const CALL = 2;
const HEADER = 12;
/** Reserved address space, not memory: pages are only touched as the buffer grows. */
const MAX_BYTES = 1024 * 2 ** 20;
/** How often a waiting Worker looks again, should a wake-up be missed. */
const RECHECK_MS = 20;

/** A buffer for the answers of one Worker. */
export function answerBuffer(): SharedArrayBuffer {
  return new SharedArrayBuffer(64 * 1024, { maxByteLength: MAX_BYTES });
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const header = (shared: SharedArrayBuffer) => new Int32Array(shared, 0, HEADER / 4);

/** The Worker, before it asks: no answer is there for `call` yet. */
export function expectAnswer(shared: SharedArrayBuffer): void {
  Atomics.store(header(shared), FLAG, 0);
}

/**
 * The main isolate (of the plugin host): writes the answer to call `call`, as JSON (made in the
 * operator, `answerJson`), and wakes the Worker.
 */
export function writeAnswer(shared: SharedArrayBuffer, call: number, json: string): void {
  let bytes = encoder.encode(json);
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
  const words = header(shared);
  Atomics.store(words, LENGTH, bytes.length);
  Atomics.store(words, CALL, call);
  Atomics.store(words, FLAG, 1);
  Atomics.notify(words, FLAG);
}

/** `answer` as `writeAnswer` takes it. */
export function answerJson(answer: unknown): string {
  return JSON.stringify(answer) ?? "null";
}

/** The Worker: blocks until the answer to call `call` is there, and reads it. */
export function awaitAnswer(shared: SharedArrayBuffer, call: number): unknown {
  const words = header(shared);
  while (Atomics.load(words, CALL) !== call) Atomics.wait(words, FLAG, 0, RECHECK_MS);
  const length = Atomics.load(words, LENGTH);
  // TextDecoder takes no shared memory: copy first.
  return JSON.parse(decoder.decode(new Uint8Array(shared, HEADER, length).slice()));
}
