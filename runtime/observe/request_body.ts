/**
 * Reads a request's body as it arrives, within bounds: its own size, the bytes the bodies of all
 * requests hold at once, and a deadline; whatever passes one is an HttpError (413, 503, 408, or
 * 400 for a body that is not valid HTTP) that ends the connection, so what the caller still sends
 * is never read.
 */
import { ownedChunkReader } from "../../util/owned_chunks.ts";
import { HttpError } from "./http_error.ts";

/** Ends the connection after the answer (the front closes it; HTTP/2 drops the header). */
export const CLOSE = { connection: "close" };

/** The bytes of request bodies held at once by all the requests of a server, bounded. */
export class BodyBudget {
  readonly #max: number;
  #held = 0;

  /** `max`: the most bytes held at once (0: no body at all). */
  constructor(max: number) {
    this.#max = max;
  }

  /** Bytes held now. */
  get held(): number {
    return this.#held;
  }

  /** Takes `bytes` when they fit under the bound; false (and nothing taken) when they would not. */
  take(bytes: number): boolean {
    if (this.#held + bytes > this.#max) return false;
    this.#held += bytes;
    return true;
  }

  /** Gives back `bytes` taken before (their request is answered). */
  give(bytes: number): void {
    this.#held -= bytes;
  }
}

/** The bounds of one body: its size, when it must have arrived, and the budget it draws on. */
export interface BodyBounds {
  /** The largest body, in bytes. */
  maxBytes: number;
  /** When the whole body must be in, on `performance.now()`'s clock. */
  deadline: number;
  /** Every chunk held is taken from it; the caller gives back what `taken` says once answered. */
  budget: BodyBudget;
  /** Told of each chunk taken from the budget. */
  taken(bytes: number): void;
}

/** Reads `request`'s body chunk by chunk as it arrives, within `bounds` (see the module doc). */
export async function readBody(
  request: Request,
  bounds: BodyBounds,
): Promise<Uint8Array<ArrayBuffer>> {
  const max = bounds.maxBytes;
  if (!request.body) return new Uint8Array(0);
  // Each chunk held owns its bytes, so what the bounds count is what the bodies hold.
  const reader = ownedChunkReader(request.body);
  const chunks: Uint8Array[] = [];
  let size = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new HttpError(408, "the body did not arrive in time", CLOSE)),
      Math.max(0, bounds.deadline - performance.now()),
    );
  });
  timedOut.catch(() => {});
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), timedOut]);
      if (done) break;
      size += value.length;
      if (size > max) throw new HttpError(413, `a body of at most ${max} bytes`, CLOSE);
      if (!bounds.budget.take(value.length)) {
        throw new HttpError(503, "too many bodies at once; try again", {
          ...CLOSE,
          "retry-after": "1",
        });
      }
      bounds.taken(value.length);
      chunks.push(value);
    }
  } catch (error) {
    reader.cancel().catch(() => {});
    if (error instanceof HttpError) throw error;
    // The connection broke, or the body is not valid HTTP (a bad chunk, say).
    throw new HttpError(400, "the body could not be read (not valid HTTP, or cut off)", CLOSE);
  } finally {
    clearTimeout(timer);
  }
  if (chunks.length === 1) return chunks[0] as Uint8Array<ArrayBuffer>;
  const body = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.length;
  }
  return body;
}

/** Whether the caller says a body follows (Deno gives a GET's body as null, declared or not). */
export function declaresBody(request: Request): boolean {
  const length = request.headers.get("content-length");
  return request.headers.has("transfer-encoding") || (length !== null && length !== "0");
}
