/**
 * A self-signed serving certificate made at start, as controller-runtime makes one for its metrics
 * when no certificate is given: ECDSA P-256 from WebCrypto, written in DER by the few lines below.
 * (The X.509 library the webhooks' self-managed CA uses would cost every start far more time and
 * memory than these few lines: bench/README.md, "What a start costs: the X.509 library".) Whoever
 * scrapes it
 * either skips verification (the ServiceMonitor in deploy/monitoring does) or is given a real
 * certificate through `--metrics-cert-dir`.
 */
import type { ServingCertificate } from "./http_server.ts";

const YEAR_MS = 365 * 24 * 3600_000;
/** Backdated so a slightly skewed clock does not find it "not yet valid". */
const BACKDATE_MS = 3600_000;

/**
 * A certificate source for `HttpServer`: one self-signed certificate for `hosts`, made anew once
 * two thirds of its `lifetimeMs` (default a year) have passed.
 */
export function selfSignedCertificate(
  hosts: { dns: string[]; ips?: string[] },
  lifetimeMs = YEAR_MS,
): () => Promise<ServingCertificate> {
  let current: { certificate: ServingCertificate; renewAt: number } | undefined;
  let making: Promise<ServingCertificate> | undefined;
  return () => {
    if (current && Date.now() < current.renewAt) return Promise.resolve(current.certificate);
    making ??= makeSelfSigned(hosts, lifetimeMs).then((certificate) => {
      current = { certificate, renewAt: Date.now() + lifetimeMs * 2 / 3 };
      return certificate;
    }).finally(() => making = undefined);
    return making;
  };
}

/** One self-signed serving certificate (not a CA) for the DNS names and IP addresses given. */
export async function makeSelfSigned(
  hosts: { dns: string[]; ips?: string[] },
  lifetimeMs = YEAR_MS,
): Promise<ServingCertificate> {
  const keys = await crypto.subtle.generateKey(
    { name: "ECDSA", namedCurve: "P-256" },
    true,
    ["sign", "verify"],
  ) as CryptoKeyPair;
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", keys.publicKey));
  const name = sequence(
    set(sequence(oid("2.5.4.3"), tlv(0x0c, utf8(hosts.dns[0] ?? "localhost")))),
  );
  const ecdsaWithSha256 = sequence(oid("1.2.840.10045.4.3.2"));
  const serial = crypto.getRandomValues(new Uint8Array(16));
  serial[0] &= 0x7f;
  const now = Date.now();
  const altNames = [
    ...hosts.dns.map((dns) => tlv(0x82, utf8(dns))),
    ...(hosts.ips ?? []).map((ip) => tlv(0x87, ipBytes(ip))),
  ];
  const extensions = [
    extension("2.5.29.19", true, sequence()), // basic constraints: not a CA
    extension("2.5.29.15", true, tlv(0x03, new Uint8Array([0x07, 0x80]))), // digitalSignature
    extension("2.5.29.37", false, sequence(oid("1.3.6.1.5.5.7.3.1"))), // serverAuth
    extension("2.5.29.17", false, sequence(...altNames)),
  ];
  const tbs = sequence(
    tlv(0xa0, integer(new Uint8Array([2]))), // v3
    integer(serial),
    ecdsaWithSha256,
    name,
    sequence(utcTime(new Date(now - BACKDATE_MS)), utcTime(new Date(now + lifetimeMs))),
    name,
    spki,
    tlv(0xa3, sequence(...extensions)),
  );
  const raw = new Uint8Array(
    await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, keys.privateKey, tbs),
  );
  // WebCrypto signs as r‖s; X.509 wants SEQUENCE { INTEGER r, INTEGER s }.
  const signature = sequence(integer(raw.subarray(0, 32)), integer(raw.subarray(32)));
  const cert = sequence(tbs, ecdsaWithSha256, bitString(signature));
  const key = new Uint8Array(await crypto.subtle.exportKey("pkcs8", keys.privateKey));
  return { cert: pem("CERTIFICATE", cert), key: pem("PRIVATE KEY", key) };
}

function pem(label: string, der: Uint8Array): string {
  const base64 = btoa(String.fromCharCode(...der));
  return `-----BEGIN ${label}-----\n${
    base64.match(/.{1,64}/g)!.join("\n")
  }\n-----END ${label}-----\n`;
}

/** A DER type-length-value. */
function tlv(tag: number, value: Uint8Array): Uint8Array<ArrayBuffer> {
  const length = value.length < 0x80
    ? [value.length]
    : value.length < 0x100
    ? [0x81, value.length]
    : [0x82, value.length >> 8, value.length & 0xff];
  return concat(new Uint8Array([tag, ...length]), value);
}

function concat(...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

const sequence = (...parts: Uint8Array[]) => tlv(0x30, concat(...parts));
const set = (...parts: Uint8Array[]) => tlv(0x31, concat(...parts));
const utf8 = (text: string) => new TextEncoder().encode(text);

/** An unsigned big-endian INTEGER: no superfluous leading zeros, one if the top bit is set. */
function integer(bytes: Uint8Array): Uint8Array {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  const trimmed = bytes.subarray(start);
  return tlv(0x02, trimmed[0] & 0x80 ? concat(new Uint8Array([0]), trimmed) : trimmed);
}

function bitString(bytes: Uint8Array): Uint8Array {
  return tlv(0x03, concat(new Uint8Array([0]), bytes));
}

function oid(dotted: string): Uint8Array {
  const [first, second, ...rest] = dotted.split(".").map(Number);
  const bytes = [first * 40 + second];
  for (const arc of rest) {
    const groups = [arc & 0x7f];
    for (let value = arc >> 7; value > 0; value >>= 7) groups.unshift((value & 0x7f) | 0x80);
    bytes.push(...groups);
  }
  return tlv(0x06, new Uint8Array(bytes));
}

function extension(id: string, critical: boolean, value: Uint8Array): Uint8Array {
  return sequence(
    oid(id),
    ...(critical ? [tlv(0x01, new Uint8Array([0xff]))] : []),
    tlv(0x04, value),
  );
}

/** UTCTime (YYMMDDHHMMSSZ), valid until 2049, which a year from now is. */
function utcTime(date: Date): Uint8Array {
  const text = date.toISOString().replace(/[-:T]/g, "").slice(2, 14) + "Z";
  return tlv(0x17, utf8(text));
}

function ipBytes(ip: string): Uint8Array {
  if (ip.includes(":")) {
    const [head, tail = ""] = ip.split("::");
    const groups = (part: string) => part ? part.split(":").map((g) => parseInt(g, 16)) : [];
    const left = groups(head);
    const right = groups(tail);
    const all = ip.includes("::")
      ? [...left, ...new Array(8 - left.length - right.length).fill(0), ...right]
      : left;
    return new Uint8Array(all.flatMap((g) => [g >> 8, g & 0xff]));
  }
  return new Uint8Array(ip.split(".").map(Number));
}
