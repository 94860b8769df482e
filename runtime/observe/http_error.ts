/** A refusal in our words, with its HTTP status, that a server of ours answers as it is. */

/** A refusal in our words, with its HTTP status. */
export class HttpError extends Error {
  /** Always `HttpError`. */
  override readonly name = "HttpError";
  /**
   * `headers` go with the answer (`Retry-After` with a 503, `Connection: close` after a broken
   * body).
   */
  constructor(readonly status: number, message: string, readonly headers?: HeadersInit) {
    super(message);
  }
}
