import { expect } from "expect";
import type { Logger } from "../observe/mod.ts";
import { WarningThrottle } from "../observe/mod.ts";
import { conversionResponse, type Converter } from "./crd_conversion.ts";
import { VersionSchemas } from "./version_schemas.ts";
import { widget, WIDGET_CONVERSION, WIDGET_CRD } from "./testdata/widget_crd.ts";
import type { ConversionReviewRequest } from "./webhook_review.ts";

function converter(): Converter & { lines: string[] } {
  const lines: string[] = [];
  const record = (message: string) => void lines.push(message);
  const log = { warn: record, error: record, info: record } as unknown as Logger;
  return {
    conversions: [WIDGET_CONVERSION],
    schemas: new VersionSchemas([WIDGET_CRD]),
    warnings: new WarningThrottle(log),
    log,
    lines,
  };
}

const review = (desiredAPIVersion: string, ...objects: ConversionReviewRequest["objects"]) =>
  ({ uid: "u1", desiredAPIVersion, objects }) as ConversionReviewRequest;

type Answer = {
  apiVersion: string;
  response: {
    uid: string;
    convertedObjects: unknown[];
    result: { status: string; message?: string };
  };
};

Deno.test("every object is converted, or none: the first that cannot names its index and name", () => {
  const by = converter();
  const ok = conversionResponse(
    review("ex.com/v2", widget("ex.com/v1", { size: 2 }), widget("ex.com/v1", { size: 3 })),
    by,
  ) as Answer;
  expect(ok.apiVersion).toBe("apiextensions.k8s.io/v1");
  expect(ok.response.uid).toBe("u1");
  expect(ok.response.result).toEqual({ status: "Success" });
  expect(ok.response.convertedObjects.map((o) => (o as { spec: unknown }).spec))
    .toEqual([{ count: 2 }, { count: 3 }]);
  const failed = conversionResponse(
    review("ex.com/v2", widget("ex.com/v1", { size: 2 }), widget("ex.com/v1", { size: 7 }, "b")),
    by,
  ) as Answer;
  expect(failed.response).toEqual({
    uid: "u1",
    convertedObjects: [],
    result: { status: "Failure", message: "objects[1] (b): spec.size: 7 has no v2 form" },
  });
});

Deno.test("a conversion refuses another group, a kind it does not serve, and a shape it does not know", () => {
  const by = converter();
  const message = (...objects: ConversionReviewRequest["objects"]) =>
    (conversionResponse(review("ex.com/v2", ...objects), by) as Answer).response.result.message;
  expect(message(widget("other.com/v1", {}))).toBe(
    'objects[0] (w): cannot convert "other.com/v1" to another group (ex.com/v2)',
  );
  expect(message({ ...widget("ex.com/v1", {}), kind: "Gadget" }))
    .toBe('objects[0] (w): no conversion is served for "ex.com/v1" Gadget');
  expect(message(widget("ex.com/v1", { unknown: 1 }))).toMatch(
    /^objects\[0\] \(w\): spec\.unknown/,
  );
  // Bounds are not held against a conversion: an object stored before one existed converts.
  expect(message(widget("ex.com/v1", { size: 99 }))).toBeUndefined();
  // A long apiVersion is cut in the message.
  expect(message(widget(`x/${"v".repeat(200)}`, {}))).toMatch(/"x\/v{62}…"/);
});

Deno.test("a conversion that breaks is a failure in words, told to the log, never its own words", () => {
  const by = converter();
  const answer = conversionResponse(review("ex.com/v2", widget("ex.com/v1", { size: 9 })), by);
  expect((answer as Answer).response.result.message)
    .toBe("objects[0] (w): the conversion failed; the operator's log says more");
  expect(by.lines).toEqual(["converting a {kind} failed: {error}"]);
  // A result its target schema refuses is refused too, and logged as the bug it is.
  const bad = {
    ...converter(),
    conversions: [{ ...WIDGET_CONVERSION, convert: () => widget("ex.com/v2", { size: 1 }) }],
  };
  const refused = conversionResponse(review("ex.com/v2", widget("ex.com/v1", { size: 1 })), bad);
  expect((refused as Answer).response.result.message)
    .toMatch(/^objects\[0\] \(w\): the converted object does not fit ex\.com\/v2: spec\.size/);
  expect(bad.lines).toEqual([
    "converting a {kind} to {to} made an object its schema refuses: {after}",
  ]);
});
