/** Parses a Kubernetes watch stream (newline-delimited JSON) into typed events. */
import { ApiError, type Status } from "./errors.ts";

/** One watch event. BOOKMARK objects carry only `metadata.resourceVersion` and annotations. */
export interface WatchEvent<T> {
  /** What happened (a BOOKMARK carries only a resourceVersion). */
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK";
  /** The object after the change (before it, for DELETED). */
  object: T;
}

/**
 * Splits a byte stream into lines, whatever the chunk boundaries (a line may span chunks, a
 * chunk may hold many lines, a multi-byte character may be split). Empty lines are skipped.
 */
export async function* ndjsonLines(
  chunks: AsyncIterable<Uint8Array>,
): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffered = "";
  for await (const chunk of chunks) {
    buffered += decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, newline).trim();
      buffered = buffered.slice(newline + 1);
      if (line) yield line;
    }
  }
  buffered += decoder.decode();
  if (buffered.trim()) yield buffered.trim();
}

/**
 * The events of a watch response. An ERROR event becomes a thrown ApiError (410 Gone when the
 * resourceVersion is too old); an abort through `signal` ends the stream without an error.
 */
export async function* watchEvents<T>(
  response: Response,
  signal?: AbortSignal,
): AsyncGenerator<WatchEvent<T>> {
  if (!response.body) return;
  try {
    for await (const line of ndjsonLines(response.body)) {
      const event = JSON.parse(line) as { type: string; object: unknown };
      if (event.type === "ERROR") {
        const status = event.object as Status;
        throw new ApiError({
          code: status.code ?? 500,
          reason: status.reason ?? "Unknown",
          message: status.message ?? "watch error",
          details: status.details,
        });
      }
      yield event as WatchEvent<T>;
    }
  } catch (error) {
    if (signal?.aborted && !(error instanceof ApiError)) return;
    throw error;
  } finally {
    await response.body.cancel().catch(() => {});
  }
}
