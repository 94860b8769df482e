/**
 * A token file that is a FIFO is refused before anything waits on it. Named `_process_test`
 * because making a FIFO runs `mkfifo`: `deno task test:unit` runs no program.
 */
import { expect } from "expect";
import { CredentialError, readCredentialFile } from "./credential_source.ts";

Deno.test("readCredentialFile: a FIFO is refused at once, not read (nobody may ever write it)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const fifo = `${dir}/fifo`;
    await new Deno.Command("mkfifo", { args: [fifo] }).output();
    const message = await readCredentialFile(fifo, "the token file").then(() => "", (e) => {
      expect(e).toBeInstanceOf(CredentialError);
      return e.message as string;
    });
    expect(message).toMatch(/the token file .*fifo is a FIFO \(named pipe\)/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
