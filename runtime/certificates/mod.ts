/**
 * X.509 certificates minted here: a CA and the serving certificates it signs, and the webhooks'
 * self-managed certificate kept in a Secret. Not re-exported by `runtime/mod.ts` and loaded only
 * where needed: the X.509 library costs every start some 60 ms and 14 MiB.
 */
export * from "./certificate_authority.ts";
export * from "./self_managed_certificate.ts";
