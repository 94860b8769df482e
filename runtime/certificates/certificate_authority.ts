/**
 * Mints X.509 certificates with WebCrypto (ECDSA P-256): a CA, and serving certificates it signs.
 * For the webhooks' self-managed certificates, and for the test harness's control plane.
 */
// @peculiar/x509 resolves its algorithms through tsyringe, which needs the Reflect metadata API.
import "reflect-metadata";
import * as x509 from "@peculiar/x509";

x509.cryptoProvider.set(crypto);

const EC: EcKeyGenParams = { name: "ECDSA", namedCurve: "P-256" };
const EC_SIGN: EcdsaParams = { name: "ECDSA", hash: "SHA-256" };
/** Backdated so a slightly skewed clock does not find them "not yet valid". */
const BACKDATE_MS = 3600_000;

/** A certificate and its private key, both PEM. */
export interface KeyPair {
  cert: string;
  key: string;
}

export function pem(label: string, der: ArrayBuffer): string {
  const base64 = btoa(String.fromCharCode(...new Uint8Array(der)));
  return `-----BEGIN ${label}-----\n${
    base64.match(/.{1,64}/g)!.join("\n")
  }\n-----END ${label}-----\n`;
}

async function privateKeyPem(key: CryptoKey): Promise<string> {
  return pem("PRIVATE KEY", await crypto.subtle.exportKey("pkcs8", key));
}

function serial(): string {
  // Positive, random, 16 bytes: what RFC 5280 asks of serial numbers.
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[0] &= 0x7f;
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function validity(lifetimeMs: number): { notBefore: Date; notAfter: Date } {
  const now = Date.now();
  return { notBefore: new Date(now - BACKDATE_MS), notAfter: new Date(now + lifetimeMs) };
}

/** A self-signed CA. */
export async function createCa(commonName: string, lifetimeMs: number): Promise<KeyPair> {
  const keys = await crypto.subtle.generateKey(EC, true, ["sign", "verify"]) as CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=${commonName}`,
    ...validity(lifetimeMs),
    signingAlgorithm: EC_SIGN,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign |
          x509.KeyUsageFlags.digitalSignature,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert: cert.toString("pem") + "\n", key: await privateKeyPem(keys.privateKey) };
}

/**
 * A leaf certificate signed by `ca`: a serving one when `usage` names hosts (DNS names, IP
 * addresses), else a client one.
 */
export async function issueCertificate(
  ca: KeyPair,
  subject: string,
  usage: { dns?: string[]; ips?: string[] },
  lifetimeMs: number,
): Promise<KeyPair> {
  const caCert = new x509.X509Certificate(ca.cert);
  const caKey = await crypto.subtle.importKey(
    "pkcs8",
    x509.PemConverter.decodeFirst(ca.key),
    EC,
    false,
    ["sign"],
  );
  const keys = await crypto.subtle.generateKey(EC, true, ["sign", "verify"]) as CryptoKeyPair;
  const serving = Boolean(usage.dns?.length || usage.ips?.length);
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(
      x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
      true,
    ),
    new x509.ExtendedKeyUsageExtension([
      serving ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth,
    ]),
    await x509.AuthorityKeyIdentifierExtension.create(caCert),
  ];
  if (serving) {
    extensions.push(
      new x509.SubjectAlternativeNameExtension([
        ...(usage.dns ?? []).map((value) => ({ type: "dns" as const, value })),
        ...(usage.ips ?? []).map((value) => ({ type: "ip" as const, value })),
      ]),
    );
  }
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject,
    issuer: caCert.subject,
    ...validity(lifetimeMs),
    signingAlgorithm: EC_SIGN,
    publicKey: keys.publicKey,
    signingKey: caKey,
    extensions,
  });
  return { cert: cert.toString("pem") + "\n", key: await privateKeyPem(keys.privateKey) };
}

/** When a PEM certificate stops being valid. */
export function notAfter(certPem: string): Date {
  return new x509.X509Certificate(certPem).notAfter;
}
