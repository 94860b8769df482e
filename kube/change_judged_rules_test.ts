import { expect } from "expect";
import { asCreate, changeJudged, changeJudgedSchema } from "./change_judged_rules.ts";

Deno.test("a rule on an object passes an update whose old value broke it too", () => {
  expect(changeJudged({ rule: "self.a <= self.b", message: "m", fieldPath: ".a" }, "object"))
    .toEqual({
      rule:
        "(self.a <= self.b) || (oldSelf.hasValue() && !(oldSelf.value().a <= oldSelf.value().b))",
      message: "m",
      fieldPath: ".a",
      optionalOldSelf: true,
    });
});

Deno.test("self.all on a map or a list is judged entry by entry", () => {
  expect(changeJudged({ rule: "self.all(k, k.matches('^[a-z]+$'))" }, "map").rule).toBe(
    "self.all(k, (k.matches('^[a-z]+$')) || (oldSelf.hasValue() && k in oldSelf.value() && " +
      "oldSelf.value()[k] == self[k]))",
  );
  expect(changeJudged({ rule: "self.all(x, x > 0)" }, "list").rule).toBe(
    "self.all(x, (x > 0) || (oldSelf.hasValue() && x in oldSelf.value()))",
  );
  // Two calls joined are not one `all`: the whole rule is judged instead.
  expect(changeJudged({ rule: "self.all(k, k != 'a') && self.all(k, k != 'b')" }, "map").rule)
    .toBe(
      "(self.all(k, k != 'a') && self.all(k, k != 'b')) || (oldSelf.hasValue() && " +
        "!(oldSelf.value().all(k, k != 'a') && oldSelf.value().all(k, k != 'b')))",
    );
});

Deno.test("only the variable self is renamed: not a field, not a word in a string", () => {
  const rule = `self.x.self == 'self' && "it's self" != self.y && r'\\self' != ''`;
  expect(changeJudged({ rule }, "object").rule).toBe(
    `(${rule}) || (oldSelf.hasValue() && !(oldSelf.value().x.self == 'self' && ` +
      `"it's self" != oldSelf.value().y && r'\\self' != ''))`,
  );
  // A parenthesis inside a string does not end the call.
  expect(changeJudged({ rule: "self.all(k, k != ')')" }, "map").rule).toContain(
    "self.all(k, (k != ')') || (oldSelf",
  );
});

Deno.test("a rule that already judges changes is left as it is", () => {
  const rule = { rule: "self == oldSelf", message: "immutable" };
  expect(changeJudged(rule, "object")).toBe(rule);
});

Deno.test("changeJudgedSchema: objects, maps and lists; not scalars, not list items", () => {
  const scalarRule = { rule: "self >= 1" };
  const schema = {
    type: "object",
    "x-kubernetes-validations": [{ rule: "has(self.spec)" }],
    properties: {
      count: { type: "integer", "x-kubernetes-validations": [scalarRule] },
      labels: {
        type: "object",
        additionalProperties: { type: "string", maxLength: 63 },
        "x-kubernetes-validations": [{ rule: "self.all(k, size(k) < 9)" }],
      },
      items: {
        type: "array",
        items: { type: "object", "x-kubernetes-validations": [{ rule: "has(self.name)" }] },
        "x-kubernetes-validations": [{ rule: "size(self) < 5" }],
      },
    },
  };
  const judged = changeJudgedSchema(schema) as typeof schema;
  expect(judged["x-kubernetes-validations"][0]).toMatchObject({ optionalOldSelf: true });
  expect(judged.properties.count["x-kubernetes-validations"][0]).toBe(scalarRule);
  expect(judged.properties.labels["x-kubernetes-validations"][0].rule).toContain(
    "k in oldSelf.value()",
  );
  expect(judged.properties.items["x-kubernetes-validations"][0]).toMatchObject({
    optionalOldSelf: true,
  });
  expect(judged.properties.items.items["x-kubernetes-validations"][0]).toEqual({
    rule: "has(self.name)",
  });
  // The input is left as it was.
  expect(schema["x-kubernetes-validations"][0]).toEqual({ rule: "has(self.spec)" });
});

Deno.test("asCreate: the rule as a create meets it, with no old value", () => {
  for (
    const [rule, target] of [
      ["self.a <= self.b", "object"],
      ["self.all(k, k.matches('^[a-z]+$'))", "map"],
      ["self.all(x, x > 0)", "list"],
    ] as const
  ) {
    const judged = changeJudged({ rule }, target).rule;
    expect(asCreate(judged)).toBe(
      target === "object"
        ? `(${rule}) || false`
        : judged.replace(/\(oldSelf\.hasValue.*\)\)$/, "false)"),
    );
  }
  // A hand-written rule in the same form.
  expect(asCreate("self.a <= 3 || (oldSelf.hasValue() && self.a <= oldSelf.value().a)"))
    .toBe("self.a <= 3 || false");
  // A plain transition rule: a create never meets it.
  expect(asCreate("self == oldSelf")).toBeUndefined();
  expect(asCreate("self.a")).toBe("self.a");
});

Deno.test("entries are compared one by one only where that is cheap: bounded scalars", () => {
  const map = (values: Record<string, unknown>) =>
    changeJudgedSchema({
      type: "object",
      additionalProperties: values,
      "x-kubernetes-validations": [{ rule: "self.all(k, size(k) < 9)" }],
    }) as { "x-kubernetes-validations": { rule: string }[] };
  const perEntry = (values: Record<string, unknown>) =>
    map(values)["x-kubernetes-validations"][0].rule.includes("k in oldSelf.value()");
  expect(perEntry({ type: "string", maxLength: 63 })).toBe(true);
  expect(perEntry({ type: "integer" })).toBe(true);
  // The API server estimates the cost of comparing unbounded values as too high for its budget.
  expect(perEntry({ type: "string" })).toBe(false);
  expect(perEntry({ type: "object", properties: { a: { type: "string" } } })).toBe(false);
  expect(map({ type: "string" })["x-kubernetes-validations"][0].rule).toBe(
    "(self.all(k, size(k) < 9)) || (oldSelf.hasValue() && !(oldSelf.value().all(k, size(k) < 9)))",
  );
});

Deno.test("rules the caller keeps stay as written", () => {
  const keepMe = { rule: "self.all(k, dyn(self[k]) != null)" };
  const judged = changeJudgedSchema(
    {
      type: "object",
      additionalProperties: { type: "string", maxLength: 9 },
      "x-kubernetes-validations": [keepMe, { rule: "size(self) > 0" }],
    },
    (rule) => rule === keepMe,
  ) as { "x-kubernetes-validations": unknown[] };
  expect(judged["x-kubernetes-validations"][0]).toBe(keepMe);
  expect(judged["x-kubernetes-validations"][1]).toMatchObject({ optionalOldSelf: true });
});
