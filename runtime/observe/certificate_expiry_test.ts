import { expect } from "expect";
import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import { certificateNotAfter } from "./certificate_expiry.ts";
import { makeSelfSigned } from "./self_signed_certificate.ts";

x509.cryptoProvider.set(crypto);

const EC = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };

async function certificate(notAfter: Date): Promise<string> {
  const keys = await crypto.subtle.generateKey(EC, true, ["sign", "verify"]) as CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: "0102",
    name: "CN=expiry",
    notBefore: new Date("2020-01-01T00:00:00Z"),
    notAfter,
    signingAlgorithm: EC,
    keys,
    extensions: [new x509.BasicConstraintsExtension(false)],
  });
  return cert.toString("pem");
}

Deno.test("notAfter of the operator's own self-signed certificate, as an X.509 library reads it", async () => {
  const { cert } = await makeSelfSigned({ dns: ["localhost"] }, 90 * 24 * 3600_000);
  const expected = new x509.X509Certificate(cert).notAfter;
  expect(certificateNotAfter(cert)).toEqual(expected);
});

Deno.test("UTCTime and GeneralizedTime (from 2050 on) are both read", async () => {
  for (const at of ["2049-12-31T23:59:59Z", "2050-01-01T00:00:00Z", "2120-06-30T12:00:01Z"]) {
    const pem = await certificate(new Date(at));
    expect({ at, read: certificateNotAfter(pem)?.toISOString() }).toEqual({
      at,
      read: new Date(at).toISOString(),
    });
  }
});

Deno.test("the leaf of a chain counts, not the CA after it", async () => {
  const leaf = await certificate(new Date("2031-03-04T05:06:07Z"));
  const ca = await certificate(new Date("2040-01-01T00:00:00Z"));
  expect(certificateNotAfter(`${leaf}\n${ca}`)).toEqual(new Date("2031-03-04T05:06:07Z"));
});

Deno.test("anything else is undefined, never a made-up date", async () => {
  const good = await certificate(new Date("2031-03-04T05:06:07Z"));
  const body = good.split("\n").filter((l) => !l.startsWith("-----")).join("");
  const wrap = (b64: string) => `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`;
  for (
    const pem of [
      "",
      "not a certificate",
      wrap("!!!not base64!!!"),
      wrap(btoa("\x30\x03\x02\x01")), // cut short
      wrap(body.slice(0, 40)), // the start of a real one
      wrap(btoa("\x30\x00")), // an empty sequence
      "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    ]
  ) {
    expect({ pem, read: certificateNotAfter(pem) }).toEqual({ pem, read: undefined });
  }
  expect(certificateNotAfter(wrap(body))).toEqual(new Date("2031-03-04T05:06:07Z"));
});
