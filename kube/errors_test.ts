import { expect } from "expect";
import { apiErrorFrom, parseRetryAfter } from "./errors.ts";

const request = { method: "POST", url: "/api/v1/namespaces/x/configmaps" };

Deno.test("apiErrorFrom: a Status body keeps code, reason, message and causes", async () => {
  const status = {
    kind: "Status",
    apiVersion: "v1",
    status: "Failure",
    message: 'Widget "bad" is invalid: spec.size: Invalid value: 0: should be >= 1',
    reason: "Invalid",
    details: {
      name: "bad",
      kind: "Widget",
      causes: [{ reason: "FieldValueInvalid", field: "spec.size", message: "should be >= 1" }],
    },
    code: 422,
  };
  const error = await apiErrorFrom(new Response(JSON.stringify(status), { status: 422 }), request);
  expect(error.code).toBe(422);
  expect(error.reason).toBe("Invalid");
  expect(error.causes).toEqual([{
    reason: "FieldValueInvalid",
    field: "spec.size",
    message: "should be >= 1",
  }]);
  expect(error.message).toContain("spec.size");
  expect(error.message).toContain("POST /api/v1/namespaces/x/configmaps");
});

Deno.test("apiErrorFrom: a plain-text 429 from priority and fairness, with Retry-After", async () => {
  const response = new Response("Too many requests, please try again later.\n", {
    status: 429,
    headers: { "retry-after": "3" },
  });
  const error = await apiErrorFrom(response, request);
  expect(error.code).toBe(429);
  expect(error.reason).toBe("TooManyRequests");
  expect(error.message).toContain("Too many requests");
  expect(error.retryAfterSeconds).toBe(3);
  expect(error.causes).toEqual([]);
});

Deno.test("parseRetryAfter: seconds, an HTTP date, and nonsense", () => {
  expect(parseRetryAfter("7")).toBe(7);
  expect(parseRetryAfter(null)).toBeUndefined();
  expect(parseRetryAfter("soon")).toBeUndefined();
  const now = Date.parse("2026-01-01T00:00:00Z");
  expect(parseRetryAfter("Thu, 01 Jan 2026 00:00:05 GMT", now)).toBe(5);
});
