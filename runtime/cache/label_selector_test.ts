import { expect } from "expect";
import { fromLabelSelector, matchesSelector, parseSelector } from "./label_selector.ts";

Deno.test("label selectors: every operator of the string form", () => {
  const labels = { app: "web", tier: "front", env: "prod" };
  const matches = (text: string) => matchesSelector(parseSelector(text), labels);
  expect(matches("")).toBe(true);
  expect(matches("app=web")).toBe(true);
  expect(matches("app==web,tier=front")).toBe(true);
  expect(matches("app!=web")).toBe(false);
  expect(matches("missing!=x")).toBe(true);
  expect(matches("env in (prod, staging)")).toBe(true);
  expect(matches("env notin (prod)")).toBe(false);
  expect(matches("tier,!missing")).toBe(true);
  expect(matches("env in (prod,staging),app=web, tier notin (back)")).toBe(true);
  expect(matches("env in (staging,dev),app=web")).toBe(false);
  expect(matches("!app")).toBe(false);
  expect(() => parseSelector("a=b,,c")).toThrow(/empty requirement/);
  expect(() => parseSelector("a=b,")).toThrow(/empty requirement/);
  expect(() => parseSelector("a in b")).toThrow(/cannot parse "a in b"/);
});

Deno.test("label selectors: the structured form", () => {
  const selector = fromLabelSelector({
    matchLabels: { app: "web" },
    matchExpressions: [{ key: "env", operator: "NotIn", values: ["dev"] }],
  });
  expect(matchesSelector(selector, { app: "web", env: "prod" })).toBe(true);
  expect(matchesSelector(selector, { app: "web", env: "dev" })).toBe(false);
});
