/** Mints the throw-away PKI of a test control plane: a CA, serving and client certificates, SA keys. */
// @peculiar/x509 resolves its algorithms through tsyringe, which needs the Reflect metadata API.
import "reflect-metadata";
import * as x509 from "@peculiar/x509";

x509.cryptoProvider.set(crypto);

const EC: EcKeyGenParams = { name: "ECDSA", namedCurve: "P-256" };
const EC_SIGN: EcdsaParams = { name: "ECDSA", hash: "SHA-256" };

/** A certificate and its private key, both PEM. */
export interface KeyPair {
  cert: string;
  key: string;
}

/** Everything kube-apiserver and its clients need. */
export interface ControlPlanePki {
  ca: KeyPair;
  serving: KeyPair;
  admin: KeyPair;
  /** RSA key pair that signs service-account tokens (PKCS#8 private key, SPKI public key). */
  serviceAccount: { key: string; pub: string };
}

function pem(label: string, der: ArrayBuffer): string {
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

function validity(): { notBefore: Date; notAfter: Date } {
  const now = Date.now();
  // Backdated an hour so a slightly skewed clock does not make them "not yet valid".
  return { notBefore: new Date(now - 3600_000), notAfter: new Date(now + 7 * 24 * 3600_000) };
}

/** Signs a leaf certificate with the CA. `dns`/`ips` make a serving cert, else a client cert. */
async function issue(
  ca: { cert: x509.X509Certificate; keys: CryptoKeyPair },
  subject: string,
  usage: { dns?: string[]; ips?: string[] },
): Promise<KeyPair> {
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
    await x509.AuthorityKeyIdentifierExtension.create(ca.cert),
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
    issuer: ca.cert.subject,
    ...validity(),
    signingAlgorithm: EC_SIGN,
    publicKey: keys.publicKey,
    signingKey: ca.keys.privateKey,
    extensions,
  });
  return { cert: cert.toString("pem") + "\n", key: await privateKeyPem(keys.privateKey) };
}

/** A fresh CA with a serving cert for localhost/127.0.0.1 and an admin (system:masters) client cert. */
export async function createControlPlanePki(): Promise<ControlPlanePki> {
  const caKeys = await crypto.subtle.generateKey(EC, true, ["sign", "verify"]) as CryptoKeyPair;
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: "CN=ptemplate-test-ca",
    ...validity(),
    signingAlgorithm: EC_SIGN,
    keys: caKeys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign |
          x509.KeyUsageFlags.digitalSignature,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });
  const ca = { cert: caCert, keys: caKeys };
  const saKeys = await crypto.subtle.generateKey(
    {
      name: "RSASSA-PKCS1-v1_5",
      modulusLength: 2048,
      publicExponent: new Uint8Array([1, 0, 1]),
      hash: "SHA-256",
    },
    true,
    ["sign", "verify"],
  ) as CryptoKeyPair;
  return {
    ca: { cert: caCert.toString("pem") + "\n", key: await privateKeyPem(caKeys.privateKey) },
    serving: await issue(ca, "CN=kube-apiserver", {
      dns: ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"],
      ips: ["127.0.0.1"],
    }),
    admin: await issue(ca, "CN=ptemplate-admin, O=system:masters", {}),
    serviceAccount: {
      key: await privateKeyPem(saKeys.privateKey),
      pub: pem("PUBLIC KEY", await crypto.subtle.exportKey("spki", saKeys.publicKey)),
    },
  };
}

/** A CA and serving certificates it signs for 127.0.0.1 and localhost: for webhooks on loopback. */
export async function createServingPki(): Promise<{ ca: KeyPair; issue(): Promise<KeyPair> }> {
  const caKeys = await crypto.subtle.generateKey(EC, true, ["sign", "verify"]) as CryptoKeyPair;
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: "CN=ptemplate-webhook-test-ca",
    ...validity(),
    signingAlgorithm: EC_SIGN,
    keys: caKeys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });
  const ca = { cert: caCert, keys: caKeys };
  return {
    ca: { cert: caCert.toString("pem") + "\n", key: await privateKeyPem(caKeys.privateKey) },
    issue: () => issue(ca, "CN=ptemplate-webhooks", { dns: ["localhost"], ips: ["127.0.0.1"] }),
  };
}
