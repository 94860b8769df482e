import { expect } from "expect";
import { parseFieldPath } from "./field_path.ts";

Deno.test("field paths: names, quoted keys, any list item; anything else is refused", () => {
  expect(parseFieldPath('spec.template.metadata.annotations["a.b/c"]')).toEqual([
    "spec",
    "template",
    "metadata",
    "annotations",
    "a.b/c",
  ]);
  expect(parseFieldPath("spec.containers[*].env")).toEqual(["spec", "containers", "*", "env"]);
  expect(() => parseFieldPath("spec..x[")).toThrow(/is not a field path/);
});
