/**
 * Names why a request got no HTTP answer at all (refused, silent, TLS, reset, name lookup), in
 * words that say what to check, from the opaque `TypeError: fetch failed` Deno throws.
 */

/** What went wrong below HTTP. */
/** `replaced`: we closed the connection ourselves (a new one is open); `reset`: the peer or the path did. */
export type NetworkFailure = "refused" | "timeout" | "tls" | "reset" | "replaced" | "dns" | "other";

/** A request that never got an answer. `cause` is the runtime's error. */
export class NetworkError extends Error {
  /** Always `NetworkError`. */
  override readonly name = "NetworkError";
  /** What went wrong below HTTP, to tell a retryable failure and its advice from another. */
  readonly failure: NetworkFailure;
  /** `cause` is the runtime's own error, kept for the full story. */
  constructor(failure: NetworkFailure, message: string, options: { cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.failure = failure;
  }
}

/** The innermost message of an error chain (Deno keeps the real reason in `cause`). */
function detail(error: unknown): string {
  let text = error instanceof Error ? error.message : String(error);
  let cause = error instanceof Error ? error.cause : undefined;
  for (let depth = 0; cause && depth < 5; depth++) {
    text = cause instanceof Error ? cause.message : String(cause);
    cause = cause instanceof Error ? cause.cause : undefined;
  }
  return text;
}

/** What a TLS verification failure means, from rustls's words. */
function tlsProblem(text: string): string {
  if (/UnknownIssuer|CaUsedAsEndEntity|BadSignature/i.test(text)) {
    return "its certificate is not signed by the certificate authority we were given " +
      "(check certificate-authority(-data) in the kubeconfig)";
  }
  if (/NotValidForName/i.test(text)) {
    return "its certificate is not valid for this host name or address (check the server URL)";
  }
  if (/Expired/i.test(text)) return "its certificate has expired";
  if (/NotValidYet/i.test(text)) {
    return "its certificate is not valid yet (is this machine's clock right?)";
  }
  if (/corrupt message|InvalidContentType/i.test(text)) {
    return "it does not speak TLS there (is the URL http:// rather than https://?)";
  }
  if (/certificate required|CertificateRequired|BadCertificate/i.test(text)) {
    return "it did not accept our client certificate";
  }
  return `TLS failed: ${text.replace(/^.*?: /, "")}`;
}

/**
 * Classifies an error thrown by `fetch` for a request to `server`. Errors that are not about the
 * network (an abort by the caller, a bug) are returned unchanged.
 */
export function networkErrorFrom(error: unknown, server: string): unknown {
  if (error instanceof NetworkError) return error;
  if (!(error instanceof TypeError)) return error;
  const text = detail(error);
  const where = server.replace(/^https?:\/\//, "");
  if (/Connection refused/i.test(text)) {
    return new NetworkError(
      "refused",
      `connection refused by ${where}: is the API server running, and is this its address and port?`,
      { cause: error },
    );
  }
  if (/invalid peer certificate|tls|certificate|corrupt message/i.test(text)) {
    return new NetworkError("tls", `TLS with ${where} failed: ${tlsProblem(text)}`, {
      cause: error,
    });
  }
  if (/dns error|failed to lookup|Name or service not known|nodename nor servname/i.test(text)) {
    return new NetworkError("dns", `cannot resolve the host of ${server}: check the server URL`, {
      cause: error,
    });
  }
  if (/reset|broken pipe|connection closed|eof|aborted|reading a body/i.test(text)) {
    return new NetworkError("reset", `the connection to ${where} was closed: ${text}`, {
      cause: error,
    });
  }
  return new NetworkError("other", `request to ${where} failed: ${text}`, { cause: error });
}
