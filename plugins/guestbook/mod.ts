/** The guestbook example plugin (finalizers) and its CRD. */
export * from "./guestbook.ts";
