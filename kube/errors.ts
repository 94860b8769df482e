/** Turns a failed Kubernetes API response into one typed error that carries the server's `Status`. */
import type { Answer } from "./answer.ts";

/** One entry of `Status.details.causes`: which field was wrong and why. */
export interface StatusCause {
  /** Why, as a word (`FieldValueInvalid`, …). */
  reason?: string;
  /** The field, e.g. `spec.selector`. */
  field?: string;
  /** What is wrong with it. */
  message?: string;
}

/** The parts of a Kubernetes `Status` body an operator acts on. */
export interface Status {
  /** The HTTP status code. */
  code: number;
  /** The reason, e.g. `Conflict`, `NotFound`, `Invalid`. */
  reason: string;
  /** The API server's message. */
  message: string;
  /** Which object, and each field that was wrong. */
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    retryAfterSeconds?: number;
    causes?: StatusCause[];
  };
}

/** A non-2xx answer from the API server, or a request that never got one. */
export class ApiError extends Error {
  /** Always `ApiError`. */
  override readonly name = "ApiError";
  /** The HTTP status code (429, 409, 404, …). */
  readonly code: number;
  /** The Status reason, e.g. `Conflict`. */
  readonly reason: string;
  /** Which object, and each field that was wrong. */
  readonly details: Status["details"];
  /** Seconds the server asked us to wait (`Retry-After` or `details.retryAfterSeconds`). */
  readonly retryAfterSeconds?: number;

  /** An error from a `Status` body; `init` says which request it answered. */
  constructor(
    status: Status,
    init: { method?: string; url?: string; retryAfterSeconds?: number } = {},
  ) {
    const where = init.method && init.url ? ` (${init.method} ${init.url})` : "";
    super(`${status.code} ${status.reason}: ${status.message}${where}`);
    this.code = status.code;
    this.reason = status.reason;
    this.details = status.details;
    this.retryAfterSeconds = init.retryAfterSeconds ?? status.details?.retryAfterSeconds;
  }

  /** The causes the server listed, never undefined. */
  get causes(): StatusCause[] {
    return this.details?.causes ?? [];
  }
}

const reasonsByCode: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  405: "MethodNotAllowed",
  406: "NotAcceptable",
  409: "Conflict",
  410: "Expired",
  413: "RequestEntityTooLarge",
  415: "UnsupportedMediaType",
  422: "Invalid",
  429: "TooManyRequests",
  500: "InternalError",
  503: "ServiceUnavailable",
  504: "Timeout",
};

/**
 * Reads a failed response into an ApiError. The body is a `Status` for most errors, but
 * priority-and-fairness 429s and proxies answer in plain text, so anything else is kept as the message.
 */
export async function apiErrorFrom(
  response: Answer,
  request: { method: string; url: string },
): Promise<ApiError> {
  const text = await response.text();
  const retryAfter = parseRetryAfter(response.headers.get("retry-after"));
  let status: Status | undefined;
  try {
    const body = JSON.parse(text);
    if (body && body.kind === "Status") {
      status = {
        code: body.code ?? response.status,
        reason: body.reason || reasonsByCode[response.status] || "Unknown",
        message: body.message ?? "",
        details: body.details,
      };
    }
  } catch {
    // not JSON: fall through to the plain-text form
  }
  status ??= {
    code: response.status,
    reason: reasonsByCode[response.status] ?? "Unknown",
    message: text.trim() || response.statusText,
  };
  return new ApiError(status, { ...request, retryAfterSeconds: retryAfter });
}

/** `Retry-After` in seconds; the HTTP-date form is converted against the local clock. */
export function parseRetryAfter(
  value: string | null,
  now: number = Date.now(),
): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}

/** True when the error is an ApiError with this HTTP code. */
export function isApiError(error: unknown, code?: number): error is ApiError {
  return error instanceof ApiError && (code === undefined || error.code === code);
}
