import { expect } from "expect";
import { createServingPki } from "../../testing/control_plane_pki.ts";
import { HttpServer } from "./http_server.ts";
import type { Logger } from "./logging.ts";
import {
  certificateFromDir,
  CertificatePending,
  readCertificateDir,
  tlsProblem,
} from "./serving_certificate.ts";

const pki = await createServingPki();
const [a, b] = [await pki.issue(), await pki.issue()];

async function withDir(files: Record<string, string>): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "serving-cert-" });
  for (const [name, text] of Object.entries(files)) {
    await Deno.writeTextFile(`${dir}/${name}`, text);
  }
  return dir;
}

Deno.test("a certificate directory: found, pending while files are missing, unreadable", async () => {
  const whole = await withDir({ "tls.crt": a.cert, "tls.key": a.key });
  expect(await readCertificateDir(whole)).toEqual({ state: "found", certificate: a });
  const empty = await withDir({});
  expect(await readCertificateDir(empty)).toEqual({
    state: "pending",
    reason: `${empty} has no tls.crt and no tls.key yet`,
  });
  const half = await withDir({ "tls.crt": a.cert });
  expect(await readCertificateDir(half)).toEqual({
    state: "pending",
    reason: `${half} has no tls.key yet`,
  });
  const cut = await withDir({ "tls.crt": a.cert.slice(0, 40), "tls.key": a.key });
  expect((await readCertificateDir(cut)).state).toBe("pending");
  // A directory where a file should be: it cannot be read, and nothing will change that.
  const odd = await withDir({ "tls.crt": a.cert });
  await Deno.mkdir(`${odd}/tls.key`);
  expect(await readCertificateDir(odd)).toEqual({
    state: "unreadable",
    reason: expect.stringMatching(new RegExp(`^${odd}/tls.key cannot be read: `)),
  });
  await expect(certificateFromDir(empty)()).rejects.toThrow(CertificatePending);
  await expect(certificateFromDir(odd)()).rejects.toThrow(/tls.key cannot be read/);
  expect(await certificateFromDir(whole)()).toEqual(a);
  for (const dir of [whole, empty, half, cut, odd]) await Deno.remove(dir, { recursive: true });
});

Deno.test("the TLS stack's verdict on a pair, in words", () => {
  expect(tlsProblem(a)).toBeUndefined();
  expect(tlsProblem({ cert: a.cert, key: b.key })).toMatch(
    /^tls.key is not the private key of the certificate in tls.crt \(.*KeyMismatch\)$/,
  );
  expect(tlsProblem({ cert: a.key, key: a.cert })).toMatch(/^tls.crt holds no PEM certificate/);
  expect(tlsProblem({
    cert: a.cert,
    key: "-----BEGIN PRIVATE KEY-----\nzz\n-----END PRIVATE KEY-----\n",
  })).toMatch(/^tls.key holds no private key in PEM/);
});

Deno.test("a server says why it does not serve once per reason, not at every look", async () => {
  const lines: string[] = [];
  const record = (_: string, properties: Record<string, unknown>) =>
    lines.push(String(properties.problem));
  const log = { info: record, error: record } as unknown as Logger;
  let offer: () => Promise<{ cert: string; key: string } | undefined> = () =>
    Promise.reject(new CertificatePending("/certs has no tls.crt yet"));
  const server = new HttpServer({
    name: "webhooks",
    bind: { hostname: "127.0.0.1", port: 0 },
    routes: [],
    tls: { certificate: () => offer(), reloadMs: 60_000 },
    log,
  });
  await server.start();
  try {
    for (let i = 0; i < 3; i++) await server.refresh();
    expect(server.problem).toBe("no serving certificate yet: /certs has no tls.crt yet");
    offer = () => Promise.resolve({ cert: a.cert, key: b.key });
    for (let i = 0; i < 3; i++) await server.refresh();
    expect(server.problem).toMatch(
      /^the serving certificate does not load: tls.key is not the private key/,
    );
    offer = () => Promise.resolve(a);
    await server.refresh();
    expect(server.problem).toBeUndefined();
    // A bad rotation keeps the certificate served, and is said once.
    offer = () => Promise.resolve({ cert: b.cert, key: a.key });
    for (let i = 0; i < 3; i++) await server.refresh();
    expect(server.problem).toBeUndefined();
    expect(lines).toEqual([
      "no serving certificate yet: /certs has no tls.crt yet",
      expect.stringMatching(/^the serving certificate does not load: .*KeyMismatch\)$/),
      expect.stringMatching(/KeyMismatch\); still serving the one before$/),
    ]);
  } finally {
    await server.stop();
  }
});
