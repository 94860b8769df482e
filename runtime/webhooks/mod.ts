/**
 * The plugins' admission and the CRDs' conversion over HTTPS: reviews checked before use, and
 * objects checked against their CRD's schema.
 */
export { type Conversion, ConversionError } from "./crd_conversion.ts";
export * from "./schema_check.ts";
export * from "./webhook_review.ts";
export * from "./webhook_server.ts";
