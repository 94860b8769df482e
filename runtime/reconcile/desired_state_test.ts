import { expect } from "expect";
import {
  childUpToDate,
  contentHash,
  isSubset,
  stableStringify,
  stampChild,
} from "./desired_state.ts";
import { defineOperator, PTEMPLATE_OPERATOR } from "../identity/mod.ts";

const { hashAnnotation: HASH_ANNOTATION, pluginLabel: PLUGIN_LABEL } = PTEMPLATE_OPERATOR;

const parent = {
  apiVersion: "pt.example.com/v1alpha1",
  kind: "Ptemplate",
  metadata: { name: "p", namespace: "ns", uid: "u-1" },
};

Deno.test("isSubset: server defaults are ignored, our fields must match", () => {
  expect(isSubset({ a: 1, b: { c: "x" } }, { a: 1, b: { c: "x", d: 2 }, e: 3 })).toBe(true);
  expect(isSubset({ limits: { dev: 2 } }, { limits: { dev: "2" } })).toBe(true);
  expect(isSubset({ a: [1, 2] }, { a: [1, 2, 3] })).toBe(false);
  expect(isSubset({ a: [{ n: "c" }] }, { a: [{ n: "c", extra: true }] })).toBe(true);
  expect(isSubset({ a: "x" }, { a: "y" })).toBe(false);
  expect(isSubset({ a: undefined }, {})).toBe(true);
  expect(isSubset({ a: {} }, { a: null })).toBe(false);
});

Deno.test("stampChild: namespace, owner, plugin label and content hash", () => {
  const child = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" }, data: { k: "v" } };
  const stamped = stampChild(child, parent, "sample", PTEMPLATE_OPERATOR);
  expect(stamped.metadata?.namespace).toBe("ns");
  expect(stamped.metadata?.labels?.[PLUGIN_LABEL]).toBe("sample");
  expect(stamped.metadata?.ownerReferences).toEqual([
    {
      apiVersion: "pt.example.com/v1alpha1",
      kind: "Ptemplate",
      name: "p",
      uid: "u-1",
      controller: true,
      blockOwnerDeletion: true,
    },
  ]);
  const again = stampChild(
    { ...child, data: { k: "v" } },
    parent,
    "sample",
    PTEMPLATE_OPERATOR,
  );
  expect(again.metadata?.annotations?.[HASH_ANNOTATION]).toBe(
    stamped.metadata?.annotations?.[HASH_ANNOTATION],
  );
  const changed = stampChild({ ...child, data: {} }, parent, "sample", PTEMPLATE_OPERATOR);
  expect(changed.metadata?.annotations?.[HASH_ANNOTATION]).not.toBe(
    stamped.metadata?.annotations?.[HASH_ANNOTATION],
  );
  expect(() =>
    stampChild({ kind: "ConfigMap", metadata: {} }, parent, "sample", PTEMPLATE_OPERATOR)
  ).toThrow(/has no metadata.name/);
});

Deno.test("childUpToDate: drift, a removed field and a foreign edit", () => {
  const stamped = stampChild(
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" }, data: { k: "v" } },
    parent,
    "sample",
    PTEMPLATE_OPERATOR,
  );
  const cached = {
    ...stamped,
    metadata: {
      ...stamped.metadata,
      resourceVersion: "7",
      labels: { ...stamped.metadata?.labels, "someone-else": "x" },
    },
  };
  expect(childUpToDate(stamped, cached, PTEMPLATE_OPERATOR)).toBe(true);
  expect(childUpToDate(stamped, { ...cached, data: { k: "edited" } }, PTEMPLATE_OPERATOR)).toBe(
    false,
  );
  const fewer = stampChild(
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" } },
    parent,
    "sample",
    PTEMPLATE_OPERATOR,
  );
  expect(childUpToDate(fewer, stamped, PTEMPLATE_OPERATOR)).toBe(false); // data was dropped: the hash differs
  expect(childUpToDate(stamped, undefined, PTEMPLATE_OPERATOR)).toBe(false);
});

/** What 0.2 wrote: every child's hash annotation was made of it, and must stay the same. */
function stableStringify02(value: unknown): string {
  return JSON.stringify(
    value,
    (_, v) =>
      v && typeof v === "object" && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
        : v,
  );
}

async function contentHash02(value: unknown): Promise<string> {
  const bytes = new TextEncoder().encode(stableStringify02(value));
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return [...digest.slice(0, 8)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

Deno.test("stableStringify and contentHash give what 0.2 gave, so no child is rewritten on upgrade", async () => {
  const keys = [
    "a",
    "B",
    "b",
    "10",
    "9",
    "0",
    "01",
    "-1",
    "1.5",
    "é",
    "\u{1F600}",
    'a"b',
    "",
    "4294967295",
  ];
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const value = (depth: number): unknown => {
    const r = random();
    if (depth > 3 || r < 0.3) {
      return [null, true, false, 0, -1.5, 1e21, "x", 'q"\n\u0001', undefined, NaN][
        Math.floor(random() * 10)
      ];
    }
    if (r < 0.55) return Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1));
    const out: Record<string, unknown> = {};
    for (let i = Math.floor(random() * 6); i > 0; i--) {
      out[keys[Math.floor(random() * keys.length)]] = value(depth + 1);
    }
    return out;
  };
  for (let i = 0; i < 500; i++) {
    const v = value(0);
    expect(stableStringify(v)).toBe(stableStringify02(v));
    expect(contentHash(v)).toBe(await contentHash02(v));
  }
  const ds = {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name: "pt-consumer", labels: { app: "pt" } },
    spec: {
      selector: { matchLabels: { app: "pt" } },
      template: {
        metadata: { labels: { app: "pt" } },
        spec: {
          containers: [{ name: "c", image: "i:1", resources: { limits: { "x.io/d": "1" } } }],
        },
      },
    },
  };
  expect(contentHash(ds)).toBe(await contentHash02(ds));
  // An own "__proto__" (JSON.parse makes one) is data; a Date writes its toJSON.
  const exotic = {
    ...JSON.parse('{"__proto__": {"b": 1, "a": [2, {"d": 1, "c": 0}]}, "z": 1, "1": 0}'),
    when: new Date(0),
  };
  expect(stableStringify(exotic)).toBe(stableStringify02(exotic));
  expect(stableStringify(exotic)).toBe(
    '{"1":0,"__proto__":{"a":[2,{"c":0,"d":1}],"b":1},"when":"1970-01-01T00:00:00.000Z","z":1}',
  );
});

Deno.test("stableStringify sorts keys at every depth", () => {
  expect(stableStringify({ b: 1, a: { d: [{ z: 1, y: 2 }], c: 2 } })).toBe(
    '{"a":{"c":2,"d":[{"y":2,"z":1}]},"b":1}',
  );
});

Deno.test("another operator stamps its children with its own names, and reads only those", () => {
  const backup = defineOperator({
    name: "backup-operator",
    domain: "example.com",
    version: "0.1.0",
  });
  const child = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" }, data: { k: "v" } };
  const theirs = stampChild(child, parent, "sample", backup);
  expect(theirs.metadata?.labels).toEqual({ "backup-operator.example.com/plugin": "sample" });
  expect(Object.keys(theirs.metadata?.annotations ?? {})).toEqual([
    "backup-operator.example.com/desired-hash",
  ]);
  expect(childUpToDate(theirs, theirs, backup)).toBe(true);
  // Ours is not theirs: a child they stamped is not one we applied, whatever its content.
  const ours = stampChild(child, parent, "sample", PTEMPLATE_OPERATOR);
  expect(childUpToDate(ours, theirs, PTEMPLATE_OPERATOR)).toBe(false);
});
