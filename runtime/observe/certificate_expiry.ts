/**
 * When a PEM certificate stops being valid: its `notAfter`, read from the DER of the first
 * certificate in the chain (the leaf, the one a server presents). A few lines of DER walking
 * instead of an X.509 library, which would cost every start what self_signed_certificate.ts says.
 * HttpServer exposes it for the certificate it presents now.
 */
import type { Gauge, Registry } from "./metrics.ts";

/** `serving_certificate_expiration_timestamp_seconds{server}`, on `registry`. */
export function certificateExpiryGauge(registry: Registry): Gauge {
  return registry.gauge(
    "serving_certificate_expiration_timestamp_seconds",
    "When the certificate a server presents now stops being valid (its notAfter), in seconds " +
      "since the epoch",
    ["server"],
  );
}

/** The leaf's `notAfter`, or undefined when `pem` holds no certificate this can read. */
export function certificateNotAfter(pem: string): Date | undefined {
  const base64 = pem.match(/-----BEGIN CERTIFICATE-----([^-]+)-----END CERTIFICATE-----/)?.[1];
  if (!base64) return undefined;
  let der: Uint8Array;
  try {
    der = Uint8Array.from(atob(base64.replace(/\s+/g, "")), (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
  // Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] version?, serialNumber,
  // signature, issuer, validity SEQUENCE { notBefore, notAfter }, ... }, ... }
  const certificate = element(der, 0);
  if (certificate?.tag !== 0x30) return undefined;
  const tbs = element(der, certificate.start);
  if (tbs?.tag !== 0x30) return undefined;
  let field = element(der, tbs.start);
  if (field?.tag === 0xa0) field = element(der, field.end); // the explicit version
  for (let skip = 0; skip < 3 && field; skip++) field = element(der, field.end);
  if (field?.tag !== 0x30) return undefined;
  const notBefore = element(der, field.start);
  const notAfter = notBefore && element(der, notBefore.end);
  return notAfter ? time(notAfter.tag, der.subarray(notAfter.start, notAfter.end)) : undefined;
}

/** One DER element at `offset`: its tag and where its contents start and end. */
function element(
  der: Uint8Array,
  offset: number,
): { tag: number; start: number; end: number } | undefined {
  if (offset + 2 > der.length) return undefined;
  const tag = der[offset];
  let length = der[offset + 1];
  let start = offset + 2;
  if (length & 0x80) {
    const bytes = length & 0x7f;
    if (bytes === 0 || bytes > 4 || start + bytes > der.length) return undefined;
    length = 0;
    for (let i = 0; i < bytes; i++) length = length * 256 + der[start + i];
    start += bytes;
  }
  const end = start + length;
  return end > der.length ? undefined : { tag, start, end };
}

/** UTCTime (YYMMDDHHMMSSZ, years 1950–2049) or GeneralizedTime (YYYYMMDDHHMMSSZ). */
function time(tag: number, bytes: Uint8Array): Date | undefined {
  const text = new TextDecoder().decode(bytes);
  const match = tag === 0x17
    ? text.match(/^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/)
    : tag === 0x18
    ? text.match(/^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/)
    : null;
  if (!match) return undefined;
  const [year, month, day, hour, minute, second] = match.slice(1).map(Number);
  const fullYear = tag === 0x18 ? year : year < 50 ? 2000 + year : 1900 + year;
  return new Date(Date.UTC(fullYear, month - 1, day, hour, minute, second));
}
