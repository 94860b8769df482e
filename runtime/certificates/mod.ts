/**
 * X.509 certificates minted here: a CA and the serving certificates it signs, and the webhooks'
 * self-managed certificate kept in a Secret. Not re-exported by `runtime/mod.ts` and loaded only
 * where needed: the X.509 library costs every start time and memory that most never use
 * (bench/README.md, "What a start costs: the X.509 library").
 */
export * from "./certificate_authority.ts";
export * from "./self_managed_certificate.ts";
