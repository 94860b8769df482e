/**
 * Runs a kubeconfig's exec credential plugin (`client.authentication.k8s.io/v1`) non-interactively,
 * within a time and a size limit, and reads the ExecCredential it prints. Nothing it printed ever
 * reaches a message: plugins print tokens, on stdout and in their errors on stderr, in shapes no
 * pattern can catch all of (a password in a sentence, a JSON error body, a URL with userinfo), and
 * messages end up in logs. A failure says how many bytes it wrote and how to see them: run it.
 */
import { ownedChunkReader } from "../util/owned_chunks.ts";
import type { ExecConfig } from "./cluster_config.ts";
import { checkToken, CredentialError } from "./credential_source.ts";

/** What an exec credential plugin printed (`ExecCredential.status`). */
export interface ExecCredential {
  /** A bearer token for the `Authorization` header. */
  token?: string;
  /** A PEM client certificate, given together with `clientKeyData`. */
  clientCertificateData?: string;
  /** The PEM private key of `clientCertificateData`. */
  clientKeyData?: string;
  /** Local time (ms) after which it must be fetched again; undefined means never. */
  expiresAt?: number;
}

/** How long an exec credential plugin may run and how much it may print before it is stopped. */
export interface ExecLimits {
  /**
   * How long the plugin may run; default 10 s. gke-gcloud-auth-plugin and `aws eks get-token`
   * answer in a second or two; one that waits for a login prompt (it has no terminal here) or a
   * network that does not answer would otherwise stop the operator for as long. Too small fails
   * a slow but working plugin, with a message that says so.
   */
  timeoutMs?: number;
  /** The most it may print on stdout or stderr; default 1 MiB (a credential is a few KiB). */
  maxBytes?: number;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_BYTES = 1024 * 1024;
/** After the plugin exits, how long a child it left holding its stdout may keep us waiting. */
const DRAIN_MS = 500;

/** Reads a stream into memory up to `maxBytes` (`tooMuch` is called past it) or until `signal`. */
async function collect(
  stream: ReadableStream<Uint8Array>,
  maxBytes: number,
  tooMuch: () => void,
  signal: AbortSignal,
): Promise<Uint8Array> {
  const reader = ownedChunkReader(stream);
  const cancel = () => void reader.cancel().catch(() => {});
  signal.addEventListener("abort", cancel, { once: true });
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      if (size + value.length > maxBytes) {
        tooMuch();
        cancel();
        break;
      }
      chunks.push(value);
      size += value.length;
    }
  } catch {
    // The stream broke (the plugin was killed): what came before it is all there is.
  } finally {
    signal.removeEventListener("abort", cancel);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}

/** Runs the plugin and returns its credential, or throws a CredentialError that says why not. */
export async function runExecPlugin(
  exec: ExecConfig,
  source: string,
  limits: ExecLimits = {},
): Promise<ExecCredential> {
  const timeoutMs = limits.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxBytes = limits.maxBytes ?? DEFAULT_MAX_BYTES;
  const apiVersion = exec.apiVersion ?? "client.authentication.k8s.io/v1";
  const env: Record<string, string> = {
    KUBERNETES_EXEC_INFO: JSON.stringify({
      apiVersion,
      kind: "ExecCredential",
      spec: { interactive: false },
    }),
  };
  for (const { name, value } of exec.env ?? []) env[name] = value;
  // The command, never its arguments or environment, which may carry secrets.
  const plugin = `exec credential plugin "${exec.command}" (from ${source})`;
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(exec.command, {
      args: exec.args ?? [],
      env,
      cwd: exec.cwd,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  } catch (error) {
    const missing = error instanceof Deno.errors.NotFound;
    throw new CredentialError(
      `${plugin} could not be started: ${
        missing
          ? "no such program; install it, or put it on PATH"
          : `${(error as Error).name}; check that it is an executable file`
      }`,
    );
  }
  let problem: string | undefined;
  const stop = (why: string) => {
    problem ??= why;
    try {
      child.kill("SIGKILL");
    } catch {
      // exited already
    }
  };
  const timer = setTimeout(
    () => stop(`did not finish within ${timeoutMs / 1000} s`),
    timeoutMs,
  );
  const tooMuch = () => stop(`printed more than ${maxBytes} bytes`);
  const drain = new AbortController();
  const stdout = collect(child.stdout, maxBytes, tooMuch, drain.signal);
  const stderr = collect(child.stderr, maxBytes, tooMuch, drain.signal);
  let status: Deno.CommandStatus;
  let out: Uint8Array;
  let err: Uint8Array;
  try {
    status = await child.status;
    // A child the plugin left behind may hold its stdout open: what the plugin wrote before it
    // exited is there already, so wait only a moment for the end of the streams.
    const grace = setTimeout(() => drain.abort(), DRAIN_MS);
    [out, err] = await Promise.all([stdout, stderr]);
    clearTimeout(grace);
  } finally {
    clearTimeout(timer);
  }
  if (problem) {
    throw new CredentialError(
      `${plugin} ${problem} and was stopped; run it by hand to see why (it may wait for a ` +
        `login, or a network that does not answer)`,
    );
  }
  if (!status.success) {
    throw new CredentialError(
      `${plugin} exited with code ${status.code} and wrote ${err.length} bytes to stderr (not ` +
        `shown: plugins print secrets there too); run it by hand to see why (it may need a login)`,
    );
  }
  let credential: Record<string, unknown>;
  try {
    const parsed = JSON.parse(new TextDecoder().decode(out));
    if (parsed?.kind !== "ExecCredential") throw new Error();
    credential = typeof parsed.status === "object" && parsed.status ? parsed.status : {};
  } catch {
    // Not even a fragment of the output: a plugin that prints a bare token would leak it here.
    throw new CredentialError(
      `${plugin} did not print an ExecCredential (JSON with kind ExecCredential) but ` +
        `${out.length} bytes of something else`,
    );
  }
  const text = (key: string) => {
    const value = credential[key];
    if (value !== undefined && typeof value !== "string") {
      throw new CredentialError(
        `${plugin} printed an ExecCredential whose status.${key} is not ` +
          `a string`,
      );
    }
    return value || undefined;
  };
  const token = text("token");
  const clientCertificateData = text("clientCertificateData");
  const clientKeyData = text("clientKeyData");
  if (!token && !(clientCertificateData && clientKeyData)) {
    throw new CredentialError(`${plugin} printed neither a token nor a client certificate and key`);
  }
  if (token) checkToken(token, plugin);
  const expiry = text("expirationTimestamp");
  const expiresAt = expiry ? Date.parse(expiry) : undefined;
  return {
    token,
    clientCertificateData,
    clientKeyData,
    expiresAt: Number.isNaN(expiresAt) ? undefined : expiresAt,
  };
}
