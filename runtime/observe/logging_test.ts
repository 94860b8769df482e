import type { LogRecord } from "@logtape/logtape";
import { expect } from "expect";
import { jsonLine, redact, textLine } from "./logging.ts";

const record = (properties: Record<string, unknown>): LogRecord => ({
  category: ["ptemplate", "controller"],
  level: "info",
  message: ["reconciled ", "ns/a", " with Bearer abc.def"],
  rawMessage: "reconciled {key} with Bearer abc.def",
  timestamp: Date.parse("2026-01-01T10:00:00Z"),
  properties,
});

Deno.test("logs: JSON lines carry the context; secrets never appear", () => {
  const line = jsonLine(
    record({ controller: "kmm", object: "ns/a", token: "s3cret", nested: { password: "p" } }),
  );
  const parsed = JSON.parse(line);
  expect(parsed).toMatchObject({
    level: "info",
    logger: "ptemplate.controller",
    controller: "kmm",
    object: "ns/a",
  });
  expect(line).not.toContain("s3cret");
  expect(line).not.toContain('"p"');
  expect(line).not.toContain("abc.def");
  expect(line.endsWith("\n")).toBe(true);
});

Deno.test("logs: text lines for people", () => {
  const line = textLine(
    record({ controller: "kmm", object: "ns/a", error: new Error("Bearer xyz failed") }),
  );
  expect(line).toMatch(
    /^10:00:00\.000 INFO {4}controller: reconciled ns\/a with Bearer \[redacted\] controller=kmm object=ns\/a/,
  );
  expect(line).not.toContain("xyz");
  expect(redact({ clientKeyData: "k", a: ["Bearer q"] })).toEqual({
    clientKeyData: "[redacted]",
    a: ["Bearer [redacted]"],
  });
});

Deno.test("logs: a property that is undefined is left out, in text as in JSON", () => {
  const properties = { kind: "Module", namespace: undefined, object: "ns/a" };
  const text = textLine(record(properties));
  expect(text).toContain("kind=Module object=ns/a");
  expect(text).not.toContain("undefined");
  expect(jsonLine(record(properties))).not.toContain("namespace");
});

Deno.test("logs: text lines do not repeat what the message shows", () => {
  const line = textLine({
    ...record({ key: "ns/a", controller: "kmm" }),
    message: ["reconciled ", "ns/a", ""],
    rawMessage: "reconciled {key}",
  });
  expect(line).toMatch(/controller: reconciled ns\/a controller=kmm\n$/);
});
