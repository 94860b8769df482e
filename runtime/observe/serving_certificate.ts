/**
 * Where the webhook server's certificate comes from: a directory in cert-manager's layout
 * (`tls.crt`, `tls.key`), read again whenever asked, so a rotated Secret mounted there is taken.
 */
import type { ServingCertificate } from "./http_server.ts";

/** controller-runtime's default, where a cert-manager Secret is usually mounted. */
export const DEFAULT_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs";

/** The certificate in `dir`, or undefined while it has none. */
export function certificateFromDir(dir: string): () => Promise<ServingCertificate | undefined> {
  return async () => {
    try {
      const [cert, key] = await Promise.all([
        Deno.readTextFile(`${dir}/tls.crt`),
        Deno.readTextFile(`${dir}/tls.key`),
      ]);
      // A rotation writes the two files one after the other: a half-written pair waits.
      return cert.includes("END CERTIFICATE") && key.includes("END") ? { cert, key } : undefined;
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return undefined;
      throw error;
    }
  };
}
