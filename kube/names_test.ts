import { expect } from "expect";
import fc from "fast-check";
import { type NameGrammar, nameProblem, suggestedName } from "./names.ts";

Deno.test("names: what the API server takes and refuses, in its words", () => {
  const cases: [string, NameGrammar, boolean][] = [
    ["team-a", "label", true],
    ["0team", "label", true],
    ["Team-a", "label", false],
    ["team_a", "label", false],
    ["-team", "label", false],
    ["team-", "label", false],
    ["a.b", "label", false],
    ["a".repeat(63), "label", true],
    ["a".repeat(64), "label", false],
    ["", "label", false],
    ["ptemplate-operator.pt.example.com", "subdomain", true],
    // The API server does not hold a subdomain's parts to 63 characters; only the whole to 253.
    [`${"a".repeat(100)}.b`, "subdomain", true],
    ["a".repeat(253), "subdomain", true],
    ["a".repeat(254), "subdomain", false],
    ["Bad_Name!", "subdomain", false],
    ["a..b", "subdomain", false],
    [".a", "subdomain", false],
    ["webhook", "dns1035", true],
    ["1webhook", "dns1035", false],
    ["web.hook", "dns1035", false],
  ];
  for (const [name, grammar, valid] of cases) {
    expect({ name, grammar, valid: nameProblem(name, grammar) === undefined })
      .toEqual({ name, grammar, valid });
  }
  expect(nameProblem("Bad_Name!", "subdomain")).toMatch(
    /^a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters/,
  );
  expect(nameProblem("a".repeat(64), "label")).toBe(
    "must be no more than 63 characters (it has 64)",
  );
});

Deno.test("names: a suggestion is a name the grammar takes, close to what was given", () => {
  expect(suggestedName("Bad_Name!", "subdomain")).toBe("bad-name");
  expect(suggestedName("Team_A", "label")).toBe("team-a");
  expect(suggestedName("9-webhooks", "dns1035")).toBe("webhooks");
  expect(suggestedName("my..lease.", "subdomain")).toBe("my.lease");
  expect(suggestedName("___", "label")).toBeUndefined();
  for (const grammar of ["label", "subdomain", "dns1035"] as const) {
    fc.assert(fc.property(fc.string({ maxLength: 300 }), (name) => {
      const suggested = suggestedName(name, grammar);
      if (suggested !== undefined) expect(nameProblem(suggested, grammar)).toBeUndefined();
    }));
  }
});
