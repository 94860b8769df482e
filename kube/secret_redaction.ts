/**
 * Keeps credentials out of messages: text that came from a credential source (an exec plugin's
 * output, a kubeconfig that failed to parse) is cut to its first line, and anything shaped like a
 * token in it is replaced, before it can reach an error, a log line or a terminal.
 */

const REDACTED = "[redacted]";

/** `Bearer <token>`, `token: <value>`, `password=<value>` and their kin. */
const LABELLED =
  /\b(bearer\s+|(?:token|password|secret|client-key-data|client-certificate-data|auth)["']?\s*[:=]\s*["']?)[^\s"',}]+/gi;
/** A JSON Web Token (service-account tokens, OIDC tokens): three base64url parts. */
const JWT = /\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g;
/** A PEM block (a private key or certificate pasted somewhere it should not be). */
const PEM = /-----BEGIN [A-Z ]+-----[\s\S]*?(-----END [A-Z ]+-----|$)/g;
/**
 * A long run of token characters with letters and digits mixed in: an opaque token. Paths (which
 * start with `/`, `.` or `~`) and UUID-like names are kept, so messages still say where to look.
 */
const OPAQUE =
  /(?<![\w/.~-])(?=[A-Za-z0-9_+=.-]*\d)(?=[A-Za-z0-9_+=.-]*[A-Za-z])[A-Za-z0-9_+=.-]{20,}/g;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** `text` with everything token-shaped replaced by `[redacted]`. */
export function redactSecrets(text: string): string {
  return text
    .replace(PEM, REDACTED)
    .replace(JWT, REDACTED)
    .replace(LABELLED, (_, label: string) => `${label}${REDACTED}`)
    .replace(OPAQUE, (run) => UUID.test(run) ? run : REDACTED);
}

/**
 * What may be shown of output that came from a credential source: its first non-empty line,
 * redacted, and shortened; never the rest, which may hold a token on any line.
 */
export function safeExcerpt(output: string, maxLength = 200): string {
  const line = output.split("\n").map((l) => l.trim()).find(Boolean) ?? "";
  const safe = redactSecrets(line);
  return safe.length > maxLength ? `${safe.slice(0, maxLength)}…` : safe;
}
