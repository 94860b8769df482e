/**
 * Exec credential plugins run as the programs they are (shell scripts here). Named `_process_test`
 * because each runs a program: `deno task test:unit` runs none.
 */
import { expect } from "expect";
import { CredentialError } from "./credential_source.ts";
import { runExecPlugin } from "./exec_credential.ts";

const SECRET = "plug1n-t0ken-Hg72PqLx9WmZ3vKc8RtY";

async function withPlugin<T>(script: string, run: (command: string) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir();
  const command = `${dir}/plugin.sh`;
  await Deno.writeTextFile(command, `#!/bin/sh\n${script}\n`, { mode: 0o700 });
  try {
    return await run(command);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const failure = (script: string, limits = {}) =>
  withPlugin(script, (command) =>
    runExecPlugin({ command }, "test", limits).then(
      () => "",
      (e) => {
        expect(e).toBeInstanceOf(CredentialError);
        return e.message as string;
      },
    ));

const credential = (token: string) =>
  `'{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"${token}"}}'`;

Deno.test("exec plugin: stderr is never shown, whatever shape its secret has", async () => {
  for (
    const said of [
      `login expired; cached token was ${SECRET}`,
      `password is ${SECRET.slice(0, 8)}`,
      `{"error":"denied","access_token":"${SECRET}"}`,
      `fetching https://user:${SECRET}@idp.example/token failed`,
    ]
  ) {
    const message = await failure(`echo '${said}' >&2; exit 3`);
    expect(message).toMatch(/exited with code 3 and wrote \d+ bytes to stderr \(not shown/);
    expect(message).not.toContain(SECRET.slice(0, 8));
  }
});

Deno.test("exec plugin: one that never returns, or floods its output, is stopped", async () => {
  const started = performance.now();
  expect(await failure("sleep 30", { timeoutMs: 300 })).toMatch(
    /did not finish within 0\.3 s and was stopped; run it by hand/,
  );
  expect(await failure("yes", { maxBytes: 10_000 })).toMatch(/printed more than 10000 bytes/);
  // Generous: only that neither waited for the 30 s sleep.
  expect(performance.now() - started).toBeLessThan(20_000);
});

Deno.test("exec plugin: a child left holding stdout does not hold up the credential", async () => {
  const result = await withPlugin(
    `(sleep 30 &) ; echo ${credential("abc")}`,
    (command) => runExecPlugin({ command }, "test"),
  );
  expect(result.token).toBe("abc");
});

Deno.test("exec plugin: a token that cannot be a header, or a bare token, is refused without it", async () => {
  expect(await failure(`printf '%s' ${credential(`${SECRET}\\r\\nX-Evil: 1`)}`)).toMatch(
    /the token from exec credential plugin .* has a character that cannot go in an HTTP header/,
  );
  const bare = await failure(`echo ${SECRET}`);
  expect(bare).toMatch(/did not print an ExecCredential .* but \d+ bytes of something else/);
  expect(bare).not.toContain(SECRET.slice(0, 8));
});
