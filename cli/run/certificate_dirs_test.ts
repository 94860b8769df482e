import { expect } from "expect";
import { createServingPki } from "../../testing/control_plane_pki.ts";
import { sleep } from "../../util/sleep.ts";
import { StartupError } from "../../util/startup_error.ts";
import { certificateDirAtStart } from "./certificate_dirs.ts";

const pki = await createServingPki();
const [a, b] = [await pki.issue(), await pki.issue()];
const fast = { settleMs: 50 };

Deno.test("at start: a whole pair serves, missing files wait, a broken pair is refused", async () => {
  const dir = await Deno.makeTempDir({ prefix: "cert-dir-" });
  try {
    expect(await certificateDirAtStart(dir, "--webhook-cert-dir", fast)).toEqual({
      state: "pending",
      reason: `${dir} has no tls.crt and no tls.key yet`,
    });
    await Deno.writeTextFile(`${dir}/tls.crt`, a.cert);
    await Deno.writeTextFile(`${dir}/tls.key`, b.key);
    const refused = await certificateDirAtStart(dir, "--webhook-cert-dir", fast).catch((e) => e);
    expect(refused).toBeInstanceOf(StartupError);
    expect(refused.message).toMatch(
      new RegExp(
        `^--webhook-cert-dir ${dir}: tls.key is not the private key of the certificate in ` +
          "tls.crt \\(.*KeyMismatch\\); put a certificate and its own key there",
      ),
    );
    await Deno.writeTextFile(`${dir}/tls.key`, a.key);
    expect(await certificateDirAtStart(dir, "--webhook-cert-dir", fast)).toEqual({
      state: "found",
    });
    await Deno.remove(`${dir}/tls.key`);
    await Deno.mkdir(`${dir}/tls.key`);
    await expect(certificateDirAtStart(dir, "--metrics-cert-dir", fast)).rejects.toThrow(
      /^--metrics-cert-dir .*: .*tls.key cannot be read: /,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("at start: a pair being rewritten is looked at again before it is judged", async () => {
  const dir = await Deno.makeTempDir({ prefix: "cert-dir-" });
  try {
    // Half a rotation: the new certificate beside the old key; the new key comes a moment later.
    await Deno.writeTextFile(`${dir}/tls.crt`, b.cert);
    await Deno.writeTextFile(`${dir}/tls.key`, a.key);
    // Whether the key lands before the first look or before the second, the pair is served.
    const judged = certificateDirAtStart(dir, "--webhook-cert-dir", { settleMs: 2_000 });
    await sleep(50);
    await Deno.writeTextFile(`${dir}/tls.key`, b.key);
    expect(await judged).toEqual({ state: "found" });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
