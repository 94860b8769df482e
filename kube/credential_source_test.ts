import { expect } from "expect";
import { checkToken, CredentialError, readCredentialFile } from "./credential_source.ts";

Deno.test("readCredentialFile: a device, a directory and an oversized file are refused at once", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const big = `${dir}/big`;
    await Deno.writeFile(big, new Uint8Array(70_000));
    const refused = (path: string, maxBytes?: number) =>
      readCredentialFile(path, "the token file", { maxBytes }).then(() => "", (e) => {
        expect(e).toBeInstanceOf(CredentialError);
        return e.message as string;
      });
    expect(await refused("/dev/zero")).toMatch(/\/dev\/zero is a character device/);
    expect(await refused(dir)).toMatch(/is a directory; point it at a regular file/);
    expect(await refused(big, 65_536)).toMatch(/has 70000 bytes, more than the 65536/);
    expect(await refused(`${dir}/none`)).toMatch(/none does not exist/);
    await Deno.writeTextFile(`${dir}/ok`, "token\n");
    expect(await readCredentialFile(`${dir}/ok`, "x")).toBe("token\n");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("checkToken: what cannot go in a header is refused, and the token is never in the message", () => {
  const secret = "Zq81XfKp0LmW2vBn7YhRt5";
  for (
    const [token, what] of [
      [`${secret}\n`, "a line feed"],
      [`${secret}\r\nX: y`, "a carriage return"],
      [`Bearer ${secret}`, "a space"],
      [`${secret}\u00e9`, "a character outside ASCII"],
      [`${secret}\u0000`, "a control character"],
    ]
  ) {
    let message = "";
    try {
      checkToken(token, "the token file /t");
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain(what);
    expect(message).not.toContain(secret);
  }
  expect(() => checkToken("", "x")).toThrow(/is empty/);
  expect(() => checkToken("eyJhbGc.eyJzdWIi.sig-_~+/=", "x")).not.toThrow();
});
