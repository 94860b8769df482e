import { expect } from "expect";
import { VersionSchemas } from "./version_schemas.ts";
import { widget, WIDGET_CRD } from "./testdata/widget_crd.ts";

Deno.test("an object is held to its version's schema: shape always, bounds when asked", () => {
  const schemas = new VersionSchemas([WIDGET_CRD]);
  expect(schemas.problems(widget("ex.com/v1", { size: 3 }), "ex.com/v1", "Widget", true))
    .toBeUndefined();
  expect(schemas.problems(widget("ex.com/v1", { count: 3 }), "ex.com/v1", "Widget", false))
    .toMatch(/spec\.count/);
  const big = widget("ex.com/v1", { size: 11 });
  expect(schemas.problems(big, "ex.com/v1", "Widget", true)).toMatch(/at most 10/);
  expect(schemas.problems(big, "ex.com/v1", "Widget", false)).toBeUndefined();
});

Deno.test("an update is held only to the problems it adds to the stored object", () => {
  const schemas = new VersionSchemas([WIDGET_CRD]);
  const stored = widget("ex.com/v1", { size: 11 });
  expect(schemas.problems(widget("ex.com/v1", { size: 11 }), "ex.com/v1", "Widget", true, stored))
    .toBeUndefined();
  // The same words as the stored object's problem are not held against it; a new problem is.
  expect(schemas.problems(widget("ex.com/v1", { size: 12 }), "ex.com/v1", "Widget", true, stored))
    .toBeUndefined();
  expect(
    schemas.problems(
      widget("ex.com/v1", { size: 11, more: 1 }),
      "ex.com/v1",
      "Widget",
      true,
      stored,
    ),
  ).toMatch(/^spec\.more: [^;]*$/);
});

Deno.test("a version the kind is not served as is a problem; a kind no CRD names is not", () => {
  const schemas = new VersionSchemas([WIDGET_CRD]);
  expect(schemas.problems(widget("ex.com/v3", {}), "ex.com/v3", "Widget", false))
    .toBe("Widget is not served as ex.com/v3");
  expect(schemas.problems(widget("other.com/v3", {}), "other.com/v3", "Widget", false))
    .toBeUndefined();
  expect(schemas.problems(widget("ex.com/v1", "not an object"), "ex.com/v1", "Gadget", false))
    .toBeUndefined();
  // The first CRD to name a version wins.
  const stricter = structuredClone(WIDGET_CRD);
  (stricter.spec as { versions: { name: string }[] }).versions[0].name = "v9";
  const both = new VersionSchemas([WIDGET_CRD, stricter]);
  expect(both.problems(widget("ex.com/v9", { size: 1 }), "ex.com/v9", "Widget", true))
    .toBeUndefined();
});
