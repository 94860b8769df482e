import { expect } from "expect";
import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import { makeSelfSigned, selfSignedCertificate } from "./self_signed_certificate.ts";

x509.cryptoProvider.set(crypto);

Deno.test("the self-signed certificate is X.509 v3, for its hosts, signed by its own key", async () => {
  const { cert, key } = await makeSelfSigned({
    dns: ["metrics.example", "localhost"],
    ips: ["127.0.0.1", "::1"],
  });
  const parsed = new x509.X509Certificate(cert);
  expect(parsed.subject).toBe("CN=metrics.example");
  expect(parsed.issuer).toBe(parsed.subject);
  expect(await parsed.verify({ signatureOnly: true })).toBe(true);
  const san = parsed.getExtension(x509.SubjectAlternativeNameExtension)!;
  expect(san.names.toJSON()).toEqual([
    { type: "dns", value: "metrics.example" },
    { type: "dns", value: "localhost" },
    { type: "ip", value: "127.0.0.1" },
    { type: "ip", value: "::1" },
  ]);
  expect(parsed.getExtension(x509.BasicConstraintsExtension)?.ca).toBe(false);
  expect(parsed.notAfter.getTime()).toBeGreaterThan(Date.now() + 300 * 24 * 3600_000);
  expect(key).toContain("BEGIN PRIVATE KEY");
});

Deno.test("a TLS server takes it, and a client that trusts it talks to it", async () => {
  const source = selfSignedCertificate({ dns: ["localhost"], ips: ["127.0.0.1"] });
  const certificate = await source();
  expect(await source()).toBe(certificate); // one certificate, until it must be renewed
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, ...certificate, onListen: () => {} },
    () => new Response("over TLS"),
  );
  // Not a CA: a client may trust the certificate itself (rustls takes it as its own anchor).
  const client = Deno.createHttpClient({ caCerts: [certificate.cert] });
  try {
    const response = await fetch(`https://127.0.0.1:${server.addr.port}/`, { client });
    expect(await response.text()).toBe("over TLS");
  } finally {
    client.close();
    await server.shutdown();
  }
});
