/**
 * A made-up CRD for the webhooks' unit tests: `Widget` of `ex.com`, served as v1 (`spec.size`, at
 * most 10) and v2 (`spec.count`), and the conversion between them.
 */
import type { Unstructured } from "../../../kube/object.ts";
import { type Conversion, ConversionError } from "../crd_conversion.ts";

const version = (name: string, field: string) => ({
  name,
  schema: {
    openAPIV3Schema: {
      type: "object",
      properties: {
        apiVersion: { type: "string" },
        kind: { type: "string" },
        metadata: { type: "object" },
        spec: {
          type: "object",
          properties: { [field]: { type: "integer", maximum: 10 } },
        },
      },
    },
  },
});

/** The Widget CRD, with its v1 and v2 schemas. */
export const WIDGET_CRD: Unstructured = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "widgets.ex.com" },
  spec: {
    group: "ex.com",
    names: { kind: "Widget", plural: "widgets" },
    versions: [version("v1", "size"), version("v2", "count")],
  },
};

/** v1 `spec.size` is v2 `spec.count`; a size of 7 is refused in words, 9 throws a plain Error. */
export const WIDGET_CONVERSION: Conversion = {
  group: "ex.com",
  kind: "Widget",
  crd: WIDGET_CRD,
  convert(object, apiVersion) {
    const spec = object.spec as Record<string, number>;
    const value = spec.size ?? spec.count;
    if (value === 7) throw new ConversionError("spec.size: 7 has no v2 form");
    if (value === 9) throw new Error("a bug in the conversion");
    const field = apiVersion === "ex.com/v2" ? "count" : "size";
    return { ...object, apiVersion, spec: { [field]: value } };
  },
};

/** A Widget as `apiVersion` with `spec`. */
export function widget(apiVersion: string, spec: unknown, name = "w"): Unstructured {
  return { apiVersion, kind: "Widget", metadata: { name, namespace: "ns" }, spec };
}
