/** Mints the throw-away PKI of a test control plane: a CA, serving and client certificates, SA keys. */
import { createCa, issueCertificate, type KeyPair, pem } from "../runtime/certificates/mod.ts";

export type { KeyPair };

/** Long enough for any test run. */
const LIFETIME_MS = 7 * 24 * 3600_000;

/** Everything kube-apiserver and its clients need. */
export interface ControlPlanePki {
  ca: KeyPair;
  serving: KeyPair;
  admin: KeyPair;
  /** RSA key pair that signs service-account tokens (PKCS#8 private key, SPKI public key). */
  serviceAccount: { key: string; pub: string };
}

/** A fresh CA with a serving cert for localhost/127.0.0.1 and an admin (system:masters) client cert. */
export async function createControlPlanePki(): Promise<ControlPlanePki> {
  const ca = await createCa("ptemplate-test-ca", LIFETIME_MS);
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
    ca,
    serving: await issueCertificate(ca, "CN=kube-apiserver", {
      dns: ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"],
      ips: ["127.0.0.1"],
    }, LIFETIME_MS),
    admin: await issueCertificate(ca, "CN=ptemplate-admin, O=system:masters", {}, LIFETIME_MS),
    serviceAccount: {
      key: pem("PRIVATE KEY", await crypto.subtle.exportKey("pkcs8", saKeys.privateKey)),
      pub: pem("PUBLIC KEY", await crypto.subtle.exportKey("spki", saKeys.publicKey)),
    },
  };
}

/** A CA and serving certificates it signs for 127.0.0.1 and localhost: for webhooks on loopback. */
export async function createServingPki(): Promise<{ ca: KeyPair; issue(): Promise<KeyPair> }> {
  const ca = await createCa("ptemplate-webhook-test-ca", LIFETIME_MS);
  return {
    ca,
    issue: () =>
      issueCertificate(
        ca,
        "CN=ptemplate-webhooks",
        { dns: ["localhost"], ips: ["127.0.0.1"] },
        LIFETIME_MS,
      ),
  };
}
