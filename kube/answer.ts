/**
 * An answer of the API server read whole: what the client reads of a `Response` (its status, its
 * headers as they came, its text), without the stream the text was read from.
 */

/** What callers read of an answer; a `Response` is one too. */
export interface Answer {
  /** Whether the status is 2xx. */
  readonly ok: boolean;
  /** The HTTP status. */
  readonly status: number;
  /** The HTTP status's text, if the server sent one. */
  readonly statusText: string;
  /** The headers the answer came with. */
  readonly headers: Headers;
  /** The body's text. */
  text(): Promise<string>;
  /** The body parsed as JSON. */
  json(): Promise<unknown>;
}

/**
 * An answer whose body the transport has already read, within the request's deadline. It keeps
 * the `Headers` the answer came with rather than a `Response` made again from the text, which
 * would copy them, check them one by one, and encode the text only for it to be decoded again:
 * work and garbage on every request.
 */
export class ReadAnswer implements Answer {
  readonly #text: string;

  constructor(
    readonly status: number,
    readonly statusText: string,
    readonly headers: Headers,
    text: string,
  ) {
    this.#text = text;
  }

  get ok(): boolean {
    return this.status >= 200 && this.status < 300;
  }

  text(): Promise<string> {
    return Promise.resolve(this.#text);
  }

  json(): Promise<unknown> {
    return Promise.resolve().then(() => JSON.parse(this.#text));
  }
}
