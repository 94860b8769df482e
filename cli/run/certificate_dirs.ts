/**
 * What `run` makes of a certificate directory at start (`--webhook-cert-dir`, `--metrics-cert-dir`):
 * a pair the TLS stack takes is served; files not there yet are waited for, since a Secret may be
 * mounted or filled after the start (the server is not ready, and says why, until they come); a
 * file that cannot be read, or a pair the TLS stack refuses, that stays so while it is looked at
 * again is refused at once: nothing is coming to mend it, and serving nothing while running
 * would hide it.
 */
import { readCertificateDir, tlsProblem } from "../../runtime/mod.ts";
import { sleep } from "../../util/sleep.ts";
import { StartupError } from "../../util/startup_error.ts";

/** How a directory was found at start. */
export type CertificateDirAtStart =
  | { state: "found" }
  /** Not there yet: why, for the one line that says the server waits. */
  | { state: "pending"; reason: string };

export interface CertificateDirOptions {
  /**
   * How long a broken pair is watched for a change before it is refused: a rotation written by
   * hand, file after file, is whole again within it. Default 1 s.
   */
  settleMs?: number;
  /** The most looks while the files keep changing; default 5. */
  looks?: number;
}

/**
 * Looks at `dir` (given as `flag`) until it is found whole, pending, or broken and unchanged;
 * throws a StartupError naming the flag, the directory, why and the fix for the last.
 */
export async function certificateDirAtStart(
  dir: string,
  flag: string,
  options: CertificateDirOptions = {},
): Promise<CertificateDirAtStart> {
  const { settleMs = 1_000, looks = 5 } = options;
  let last: string | undefined;
  let problem = "";
  for (let look = 0; look < looks; look++) {
    if (look) await sleep(settleMs);
    const found = await readCertificateDir(dir);
    if (found.state === "pending") return found;
    const seen = found.state === "found"
      ? `${found.certificate.cert}\0${found.certificate.key}`
      : found.reason;
    const why = found.state === "found" ? tlsProblem(found.certificate) : found.reason;
    if (why === undefined) return { state: "found" };
    problem = why;
    if (seen === last) break;
    last = seen;
  }
  throw new StartupError(
    `${flag} ${dir}: ${problem}; put a certificate and its own key there as tls.crt and ` +
      "tls.key (PEM; a Secret of type kubernetes.io/tls holds such a pair, as cert-manager " +
      "writes it), readable by the operator's user",
  );
}
