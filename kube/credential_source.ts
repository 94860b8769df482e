/**
 * Reads what credentials come from (token files, certificates, kubeconfig files) within a size
 * limit, refuses files that are not files, and checks that a token can go into a header; every
 * failure names the source and the fix and never carries a byte of what was read.
 */

/** A credential could not be had (an exec plugin failed, a token file is missing or unusable). */
export class CredentialError extends Error {
  /** Always `CredentialError`. */
  override readonly name = "CredentialError";
}

/** The most a token file may hold: a service-account JWT is about 1 KiB, an OIDC one a few. */
export const MAX_TOKEN_BYTES = 64 * 1024;
/** The most a certificate, key or kubeconfig file may hold (a CA bundle of a few hundred). */
export const MAX_FILE_BYTES = 4 * 1024 * 1024;

function kindOf(info: Deno.FileInfo): string {
  if (info.isDirectory) return "a directory";
  if (info.isFifo) return "a FIFO (named pipe), whose reader waits for a writer forever";
  if (info.isCharDevice) return "a character device (such as /dev/zero, which never ends)";
  if (info.isBlockDevice) return "a block device";
  if (info.isSocket) return "a socket";
  return "not a regular file";
}

/**
 * The text of `path`, which must be a regular file (after symlinks, as a mounted secret's are) of
 * at most `maxBytes`: a FIFO would block the read forever, `/dev/zero` would fill the memory.
 * `what` names it in the error (`the token file of user "x" in ~/.kube/config`); `fail` makes
 * the error of the caller's kind. The check and the read are two steps: a file swapped for a
 * FIFO in between still blocks, which needs write access to the folder to arrange.
 */
export async function readCredentialFile(
  path: string,
  what: string,
  options: { maxBytes?: number; fail?: (message: string) => Error } = {},
): Promise<string> {
  const maxBytes = options.maxBytes ?? MAX_FILE_BYTES;
  const fail = options.fail ?? ((message: string) => new CredentialError(message));
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch (error) {
    throw fail(
      error instanceof Deno.errors.NotFound
        ? `${what} ${path} does not exist`
        : error instanceof Deno.errors.PermissionDenied || error instanceof Deno.errors.NotCapable
        ? `${what} ${path} may not be read (permission denied)`
        : `${what} ${path} cannot be read (${(error as Error).name})`,
    );
  }
  if (!info.isFile) {
    throw fail(`${what} ${path} is ${kindOf(info)}; point it at a regular file`);
  }
  if (info.size > maxBytes) {
    throw fail(
      `${what} ${path} has ${info.size} bytes, more than the ${maxBytes} such a file may have; ` +
        `point it at the right file`,
    );
  }
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path, { read: true });
  } catch (error) {
    throw fail(`${what} ${path} cannot be opened (${(error as Error).name})`);
  }
  try {
    // Read at most one byte past the limit: a file that grew since the stat is still bounded.
    const buffer = new Uint8Array(maxBytes + 1);
    let length = 0;
    while (length < buffer.length) {
      const read = await file.read(buffer.subarray(length));
      if (read === null) break;
      length += read;
    }
    if (length > maxBytes) {
      throw fail(`${what} ${path} has more than the ${maxBytes} bytes such a file may have`);
    }
    return new TextDecoder().decode(buffer.subarray(0, length));
  } finally {
    file.close();
  }
}

/**
 * Throws unless `token` can be sent as `Authorization: Bearer <token>`: visible ASCII, no space,
 * no line break (which would otherwise reach an error message quoting the header, token and all).
 */
export function checkToken(token: string, source: string, fail?: (m: string) => Error): void {
  const bad = [...token].findIndex((c) => c < "!" || c > "~");
  if (bad < 0 && token.length) return;
  const what = !token.length
    ? "is empty"
    : `has a character that cannot go in an HTTP header at position ${
      bad + 1
    } of ${token.length} ` +
      `(${describeCharacter(token.codePointAt(bad)!)})`;
  const message = `the token from ${source} ${what}; it is not shown. Tokens are visible ` +
    `ASCII without spaces: check for a trailing line break or a pasted quote`;
  throw fail ? fail(message) : new CredentialError(message);
}

function describeCharacter(code: number): string {
  if (code === 0x0a) return "a line feed";
  if (code === 0x0d) return "a carriage return";
  if (code === 0x20) return "a space";
  if (code === 0x09) return "a tab";
  if (code < 0x20 || code === 0x7f) return "a control character";
  return "a character outside ASCII";
}
