/**
 * Where a server's certificate comes from: a directory in cert-manager's layout (`tls.crt`,
 * `tls.key`), read again whenever asked, so a rotated Secret mounted there is taken; and what
 * the TLS stack makes of a pair, asked before it is served.
 */
import type { ServingCertificate } from "./http_server.ts";

/** controller-runtime's default, where a cert-manager Secret is usually mounted. */
export const DEFAULT_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs";

/**
 * The certificate is not there yet, and may come (a Secret mounted, a rotation half written):
 * its message says what is missing. A server waits for it, not ready, and says why.
 */
export class CertificatePending extends Error {
  /** Always `CertificatePending`. */
  override readonly name = "CertificatePending";
}

/** What a certificate directory holds now. */
export type CertificateDirState =
  /** Both files, each of the right kind (whether the TLS stack takes them: `tlsProblem`). */
  | { state: "found"; certificate: ServingCertificate }
  /** Files missing, or one being written: a mount may still bring them. */
  | { state: "pending"; reason: string }
  /** A file there that cannot be read. */
  | { state: "unreadable"; reason: string };

/** Looks in `dir` once. */
export async function readCertificateDir(dir: string): Promise<CertificateDirState> {
  const read = async (file: string) => {
    try {
      return { text: await Deno.readTextFile(`${dir}/${file}`) };
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return { missing: file };
      return { error: `${dir}/${file} cannot be read: ${(error as Error).message}` };
    }
  };
  const [cert, key] = await Promise.all([read("tls.crt"), read("tls.key")]);
  const unreadable = [cert, key].flatMap((f) => "error" in f ? [f.error] : []);
  if (unreadable.length) return { state: "unreadable", reason: unreadable.join("; ") };
  const missing = [cert, key].flatMap((f) => "missing" in f ? [f.missing] : []);
  if (missing.length) {
    return { state: "pending", reason: `${dir} has no ${missing.join(" and no ")} yet` };
  }
  const certText = (cert as { text: string }).text;
  const keyText = (key as { text: string }).text;
  // A rotation by hand writes the two files one after the other: a half-written pair waits.
  if (!certText.includes("END CERTIFICATE") || !keyText.includes("END")) {
    return { state: "pending", reason: `${dir} has tls.crt and tls.key, not yet both whole PEM` };
  }
  return { state: "found", certificate: { cert: certText, key: keyText } };
}

/**
 * The certificate in `dir`, for a server to ask again every few seconds: throws a
 * CertificatePending while the files are not there (yet), an Error when they cannot be read.
 */
export function certificateFromDir(dir: string): () => Promise<ServingCertificate> {
  return async () => {
    const found = await readCertificateDir(dir);
    if (found.state === "pending") throw new CertificatePending(found.reason);
    if (found.state === "unreadable") throw new Error(found.reason);
    return found.certificate;
  };
}

/**
 * Why the TLS stack would not serve with `certificate` (in words, with its own at the end), or
 * undefined when it would: asked of a listener on a free loopback port that closes at once.
 */
export function tlsProblem(certificate: ServingCertificate): string | undefined {
  try {
    Deno.listenTls({ hostname: "127.0.0.1", port: 0, ...certificate }).close();
    return undefined;
  } catch (error) {
    return explainTlsError((error as Error).message);
  }
}

/** rustls's words for a pair it refuses, with what they mean for the two files. */
export function explainTlsError(message: string): string {
  const meaning = [
    [/KeyMismatch/, "tls.key is not the private key of the certificate in tls.crt"],
    [/No certificates found/, "tls.crt holds no PEM certificate"],
    [/Unable to decode key|no private key/i, "tls.key holds no private key in PEM"],
    [/BadEncoding|invalid peer certificate/, "tls.crt's certificate is not valid X.509"],
  ] as const;
  const found = meaning.find(([pattern]) => pattern.test(message));
  return found ? `${found[1]} (${message})` : message;
}
