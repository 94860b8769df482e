import { expect } from "expect";
import { FinalizedVersions } from "./finalized_versions.ts";

Deno.test("an object is finalized once per version it was finalized at", () => {
  const finalized = new FinalizedVersions();
  finalized.remember("a", { uid: "u1", resourceVersion: "7" });
  expect(finalized.finalized("a", { uid: "u1", resourceVersion: "7" })).toBe(true);
  // A later version (the cache caught up, or another finalizer changed it) is another visit.
  expect(finalized.finalized("a", { uid: "u1", resourceVersion: "8" })).toBe(false);
  // Another object of the same name is another object.
  expect(finalized.finalized("a", { uid: "u2", resourceVersion: "7" })).toBe(false);
  expect(finalized.finalized("b", { uid: "u1", resourceVersion: "7" })).toBe(false);
  finalized.forget("a");
  expect(finalized.finalized("a", { uid: "u1", resourceVersion: "7" })).toBe(false);
});
