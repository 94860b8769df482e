import { expect } from "expect";
import { flattenLogs, flattenSpans, parseJsonLines } from "./otlp_json.ts";

const resource = {
  attributes: [{ key: "service.name", value: { stringValue: "probe" } }],
};

// Shaped as the collector's file exporter writes it (pdata's JSON): zero values present in
// AnyValue, int64 as strings, empty fields omitted.
const traces = {
  resourceSpans: [{
    resource,
    scopeSpans: [{
      scope: { name: "fixture", version: "1.0.0" },
      spans: [
        {
          traceId: "a498687dadfbd285c1daad61ccc0a9e9",
          spanId: "ae8f8bae1d47f4ca",
          parentSpanId: "778ac5ecbb7b45aa",
          name: "child",
          kind: 3,
          startTimeUnixNano: "1796169401585221345",
          endTimeUnixNano: "1796169401585254959",
          attributes: [
            { key: "s", value: { stringValue: "" } },
            { key: "b", value: { boolValue: false } },
            { key: "i", value: { intValue: "9007199254740993" } },
            { key: "d", value: { doubleValue: 0 } },
            {
              key: "a",
              value: { arrayValue: { values: [{ stringValue: "x" }, { intValue: "2" }] } },
            },
            {
              key: "kv",
              value: { kvlistValue: { values: [{ key: "k", value: { boolValue: true } }] } },
            },
            { key: "bytes", value: { bytesValue: "AQI=" } },
            { key: "empty", value: {} },
          ],
          links: [{ traceId: "00", spanId: "11", attributes: [] }],
          status: {},
        },
        {
          traceId: "a498687dadfbd285c1daad61ccc0a9e9",
          spanId: "778ac5ecbb7b45aa",
          name: "parent",
          kind: 1,
          startTimeUnixNano: "1796169401584866943",
          endTimeUnixNano: "1796169401585333448",
          events: [{
            timeUnixNano: "1796169401585246372",
            name: "happened",
            attributes: [{ key: "n", value: { doubleValue: 1.5 } }],
          }],
          status: { message: "boom", code: 2 },
        },
      ],
    }],
  }],
};

Deno.test("spans come out flat, with resource, scope, parent, events and every value type", () => {
  const [child, parent] = flattenSpans([traces]);
  expect(child).toEqual({
    traceId: "a498687dadfbd285c1daad61ccc0a9e9",
    spanId: "ae8f8bae1d47f4ca",
    parentSpanId: "778ac5ecbb7b45aa",
    name: "child",
    kind: "client",
    startTimeUnixNano: 1796169401585221345n,
    endTimeUnixNano: 1796169401585254959n,
    attributes: {
      s: "",
      b: false,
      i: 9007199254740992,
      d: 0,
      a: ["x", 2],
      kv: { k: true },
      bytes: "AQI=",
      empty: null,
    },
    events: [],
    links: [{ traceId: "00", spanId: "11", attributes: {} }],
    status: { code: "unset" },
    resource: { "service.name": "probe" },
    scope: { name: "fixture", version: "1.0.0" },
  });
  expect(parent.parentSpanId).toBeUndefined();
  expect(parent.kind).toBe("internal");
  expect(parent.status).toEqual({ code: "error", message: "boom" });
  expect(parent.events).toEqual([
    { name: "happened", timeUnixNano: 1796169401585246372n, attributes: { n: 1.5 } },
  ]);
});

Deno.test("log records come out flat, with the span they were logged in", () => {
  const logs = {
    resourceLogs: [{
      resource,
      scopeLogs: [{
        scope: { name: "deno", version: "2.9.6" },
        logRecords: [
          {
            timeUnixNano: "5",
            observedTimeUnixNano: "6",
            severityNumber: 17,
            severityText: "ERROR",
            body: { stringValue: "took 1\n" },
            attributes: [{ key: "log.iostream", value: { stringValue: "stderr" } }],
            traceId: "a498687dadfbd285c1daad61ccc0a9e9",
            spanId: "778ac5ecbb7b45aa",
          },
          { body: { kvlistValue: { values: [] } } },
        ],
      }],
    }],
  };
  const [first, second] = flattenLogs([logs]);
  expect(first).toEqual({
    timeUnixNano: 5n,
    observedTimeUnixNano: 6n,
    severityNumber: 17,
    severityText: "ERROR",
    body: "took 1\n",
    attributes: { "log.iostream": "stderr" },
    traceId: "a498687dadfbd285c1daad61ccc0a9e9",
    spanId: "778ac5ecbb7b45aa",
    resource: { "service.name": "probe" },
    scope: { name: "deno", version: "2.9.6" },
  });
  expect(second).toMatchObject({ body: {}, traceId: undefined, severityNumber: 0 });
});

Deno.test("a JSON lines file: a half-written last line waits, a broken line is an error", () => {
  const line = JSON.stringify(traces);
  expect(parseJsonLines("", "f")).toEqual([]);
  expect(parseJsonLines(`${line}\n${line}\n`, "f")).toHaveLength(2);
  // The exporter is mid-write: the tail is not a document yet, nor an error.
  expect(parseJsonLines(`${line}\n${line.slice(0, 40)}`, "f")).toHaveLength(1);
  expect(() => parseJsonLines(`${line}\n{"resourceSpans":\n`, "/tmp/traces.jsonl")).toThrow(
    /\/tmp\/traces\.jsonl:2 is not OTLP JSON/,
  );
});
