import { expect } from "expect";
import type { Resource } from "../../kube/resource.ts";
import { HttpError } from "../observe/mod.ts";
import { admissionRequest } from "./admission_request.ts";
import { VersionSchemas } from "./version_schemas.ts";
import { widget, WIDGET_CONVERSION, WIDGET_CRD } from "./testdata/widget_crd.ts";
import type { AdmissionReviewRequest } from "./webhook_review.ts";

const WIDGET_V2: Resource = {
  group: "ex.com",
  version: "v2",
  kind: "Widget",
  plural: "widgets",
  namespaced: true,
};
const plugin = { for: WIDGET_V2 };
const known = { schemas: new VersionSchemas([WIDGET_CRD]), conversions: [WIDGET_CONVERSION] };

function review(over: Partial<AdmissionReviewRequest> = {}): AdmissionReviewRequest {
  return {
    uid: "u1",
    operation: "CREATE",
    resource: { group: "ex.com", version: "v1", resource: "widgets" },
    namespace: "ns",
    name: "w",
    object: widget("ex.com/v1", { size: 3 }),
    dryRun: false,
    userInfo: { username: "alice" },
    ...over,
  };
}

/** The 400 a review is refused with, or "admitted". */
function refusal(over: Partial<AdmissionReviewRequest>, use = known): string {
  try {
    admissionRequest(plugin, review(over), use);
    return "admitted";
  } catch (error) {
    expect(error).toBeInstanceOf(HttpError);
    expect((error as HttpError).status).toBe(400);
    return (error as Error).message;
  }
}

Deno.test("the plugin sees the review's objects in its own version, and who asked", () => {
  const request = admissionRequest(
    plugin,
    review({
      operation: "UPDATE",
      oldObject: widget("ex.com/v2", { count: 2 }),
    }),
    known,
  );
  expect(request).toEqual({
    operation: "UPDATE",
    namespace: "ns",
    name: "w",
    object: { ...widget("ex.com/v2", { count: 3 }) },
    oldObject: widget("ex.com/v2", { count: 2 }),
    dryRun: false,
    username: "alice",
    userInfo: { username: "alice" },
  });
});

Deno.test("a review about another kind, scope or namespace is refused naming the field", () => {
  expect(refusal({ resource: { group: "", version: "v1", resource: "configmaps" } }))
    .toBe("this webhook admits widgets.ex.com, not configmaps.core");
  expect(refusal({ namespace: undefined })).toBe(
    "Widget is namespaced: the request needs a namespace",
  );
  expect(refusal({ object: { ...widget("ex.com/v1", {}), kind: "Gadget" } }))
    .toBe("request.object must be a Widget of ex.com");
  expect(refusal({ object: { ...widget("ex.com/v1", {}), metadata: { namespace: "other" } } }))
    .toBe("request.object.metadata.namespace is not the request's namespace");
});

Deno.test("the new object is held to its schema's bounds, the stored one to its shape alone", () => {
  expect(refusal({ object: widget("ex.com/v1", { size: 11 }) })).toMatch(
    /^request\.object: .*at most 10/,
  );
  // Stored before the bound: the stored object passes, and an update keeping its value too.
  expect(refusal({
    operation: "UPDATE",
    object: widget("ex.com/v1", { size: 11 }),
    oldObject: widget("ex.com/v1", { size: 11 }),
  })).toBe("admitted");
  expect(refusal({ oldObject: widget("ex.com/v1", { unknown: 1 }) }))
    .toMatch(/^request\.oldObject: spec\.unknown/);
});

Deno.test("an object in another version is converted, or refused in the conversion's words", () => {
  expect(refusal({ object: widget("ex.com/v1", { size: 7 }) }))
    .toBe("request.object: spec.size: 7 has no v2 form");
  expect(refusal({}, { ...known, conversions: [] })).toBe("request.object is ex.com/v1, not v2");
  // A conversion's own bug is not the caller's fault: it goes on as it is (a 500).
  expect(() =>
    admissionRequest(plugin, review({ object: widget("ex.com/v1", { size: 9 }) }), known)
  )
    .toThrow("a bug in the conversion");
});
