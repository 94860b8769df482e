import { expect } from "expect";
import fc from "fast-check";
import { ConversionError, type Unstructured } from "../mod.ts";
import { convertPtemplate, SPELLINGS_ANNOTATION } from "./ptemplate_conversion.ts";

const ALPHA = "pt.example.com/v1alpha1";
const BETA = "pt.example.com/v1beta1";

const image = fc.constantFrom(
  "quay.io/org/image:tag",
  "registry.example:5000/a/b@sha256:" + "0".repeat(64),
);
const secret = fc.record({ name: fc.constantFrom("pull", "pt-char-pull-secret") });
const labels = fc.dictionary(
  fc.constantFrom("role", "example.com/zone", "tier"),
  fc.constantFrom("a", "worker"),
  {
    minKeys: 1,
  },
);

/**
 * Valid v1alpha1 Ptemplates: any mix of fields, either spelling of the two that have two. (No
 * empty annotations map: the API server never serves one.)
 */
const alphaPtemplate = fc.record({
  maxdev: fc.integer({ min: 1, max: 256 }),
  defaultmsg: fc.stringMatching(/^[A-Za-z0-9._:+-]{1,64}$/),
  consumerimage: image,
  consumer: image,
  deviceplugin: image,
  requiredDevices: fc.integer({ min: 1, max: 1 }),
  imageRepoSecret: secret,
  imagePullSecret: secret,
}, { requiredKeys: [] }).chain((spec) => {
  // CEL allows one spelling at a time.
  const s: Record<string, unknown> = { ...spec };
  if ("consumerimage" in s) delete s.consumer;
  if ("imageRepoSecret" in s) delete s.imagePullSecret;
  return fc.record({
    spec: fc.constant(s),
    selector: labels,
    annotations: fc.option(
      // Our own annotation too, with any value a v1alpha1 writer may have left under it.
      fc.dictionary(
        fc.constantFrom("a", "b.example.com/c", SPELLINGS_ANNOTATION),
        fc.oneof(
          fc.string(),
          fc.constantFrom("consumer", "consumer;x", ",;", "imagePullSecret,consumer"),
        ),
        { minKeys: 1 },
      ),
      {
        nil: undefined,
      },
    ),
    status: fc.option(fc.record({ readyConsumers: fc.nat(), consumers: fc.array(fc.string()) }), {
      nil: undefined,
    }),
  });
}).map(({ spec, selector, annotations, status }) => {
  const object: Unstructured = {
    apiVersion: ALPHA,
    kind: "Ptemplate",
    metadata: { name: "p", namespace: "n", ...(annotations ? { annotations } : {}) },
    spec: { ...spec, selector },
  };
  if (status) object.status = status;
  return object;
});

Deno.test("v1alpha1 → v1beta1 → v1alpha1 is the object itself, spellings included", () => {
  fc.assert(
    fc.property(alphaPtemplate, (alpha) => {
      const beta = convertPtemplate(alpha, BETA);
      expect(convertPtemplate(beta, ALPHA)).toEqual(alpha);
    }),
    { numRuns: 500 },
  );
});

Deno.test("v1beta1 has one camelCase spelling per field, and round-trips too", () => {
  fc.assert(
    fc.property(alphaPtemplate, (alpha) => {
      const beta = convertPtemplate(alpha, BETA);
      const spec = beta.spec as Record<string, unknown>;
      for (
        const old of [
          "maxdev",
          "defaultmsg",
          "consumerimage",
          "consumer",
          "deviceplugin",
          "imageRepoSecret",
        ]
      ) {
        expect(spec).not.toHaveProperty(old);
      }
      // Written in v1beta1 (no remembered spelling), and back.
      const { [SPELLINGS_ANNOTATION]: _, ...rest } = beta.metadata?.annotations ?? {};
      const { annotations: _all, ...meta } = beta.metadata ?? {};
      const fresh: Unstructured = {
        ...beta,
        metadata: Object.keys(rest).length ? { ...meta, annotations: rest } : meta,
      };
      expect(convertPtemplate(convertPtemplate(fresh, ALPHA), BETA)).toEqual(fresh);
    }),
    { numRuns: 500 },
  );
});

Deno.test("the field names, and the older spellings remembered", () => {
  const beta = convertPtemplate({
    apiVersion: ALPHA,
    kind: "Ptemplate",
    metadata: { name: "p" },
    spec: {
      maxdev: 5,
      defaultmsg: "hi",
      consumer: "a/b",
      deviceplugin: "c/d",
      imagePullSecret: { name: "s" },
      selector: { r: "w" },
    },
  }, BETA);
  expect(beta.spec).toEqual({
    maxDevices: 5,
    defaultMessage: "hi",
    consumerImage: "a/b",
    devicePluginImage: "c/d",
    imagePullSecret: { name: "s" },
    selector: { r: "w" },
  });
  expect(beta.metadata?.annotations).toEqual({
    [SPELLINGS_ANNOTATION]: "consumer,imagePullSecret",
  });
  expect(() => convertPtemplate(beta, "pt.example.com/v2")).toThrow(/cannot convert/);
  // v1alpha is v1alpha1 by another name: the same fields, only the apiVersion changes.
  const old = convertPtemplate(beta, "pt.example.com/v1alpha");
  expect(old.spec).toMatchObject({ maxdev: 5, consumer: "a/b" });
  expect(convertPtemplate(old, ALPHA)).toEqual({ ...old, apiVersion: ALPHA });
});

Deno.test("what it does not understand is refused in words, never guessed at", () => {
  const alpha = (spec: unknown, metadata: Record<string, unknown> = { name: "p" }) =>
    ({ apiVersion: ALPHA, kind: "Ptemplate", metadata, spec }) as Unstructured;
  const beta = (spec: unknown) =>
    ({ apiVersion: BETA, kind: "Ptemplate", metadata: { name: "p" }, spec }) as Unstructured;
  const refusals: [Unstructured, string, RegExp][] = [
    [alpha("x"), BETA, /^spec: must be an object, not a string$/],
    [alpha(["x"]), BETA, /^spec: must be an object, not a list$/],
    [alpha({ selector: { a: "b" }, constructor: "x" }), BETA, /^spec\.constructor: unknown field$/],
    [alpha({ selector: { a: "b" }, toString: 1 }), BETA, /^spec\.toString: unknown field$/],
    [
      alpha(JSON.parse('{"selector":{"a":"b"},"__proto__":{"maxdev":3}}')),
      BETA,
      /__proto__.*unknown field/,
    ],
    [
      beta({ selector: { a: "b" }, maxdev: 300, maxDevices: 5 }),
      ALPHA,
      /^spec\.maxdev: unknown field in pt\.example\.com\/v1beta1 \(its name there is spec\.maxDevices\)$/,
    ],
    [
      alpha({ selector: { a: "b" }, maxDevices: 5 }),
      BETA,
      /^spec\.maxDevices: unknown field in pt\.example\.com\/v1alpha1 \(its name there is spec\.maxdev\)$/,
    ],
    [
      alpha({ selector: { a: "b" }, consumer: "a/b", consumerimage: "c/d" }),
      BETA,
      /^spec\.consumerimage and spec\.consumer are two spellings of one field: set one of them$/,
    ],
    [
      alpha({ selector: { a: "b" }, maxdev: "5" }),
      BETA,
      /^spec\.maxdev: must be an integer, not a string$/,
    ],
    [alpha({ selector: "a=b" }), BETA, /^spec\.selector: must be an object, not a string$/],
    [
      alpha({ selector: { a: "b" } }, { name: "p", annotations: "x" }),
      BETA,
      /^metadata\.annotations: must be an object/,
    ],
    [
      alpha({ selector: { a: "b" } }, { name: "p", annotations: { a: 1 } }),
      BETA,
      /^metadata\.annotations\.a: must be a string/,
    ],
    [
      alpha({ selector: { a: "b" } }),
      "pt.example.com/v2",
      /cannot convert a Ptemplate to that version/,
    ],
    [
      alpha({ selector: { a: "b" } }),
      "other.example.com/v1beta1",
      /cannot convert a Ptemplate to that version/,
    ],
    [
      { ...alpha({ selector: { a: "b" } }), apiVersion: "pt.example.com/v9" },
      BETA,
      /cannot convert from that version/,
    ],
    [{ ...alpha({ selector: { a: "b" } }), kind: "Secret" }, BETA, /not a Ptemplate/],
  ];
  for (const [object, to, message] of refusals) {
    let thrown: unknown;
    try {
      convertPtemplate(object, to);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConversionError);
    expect((thrown as Error).message).toMatch(message);
  }
});

Deno.test("an object stored before a bound existed converts, both ways", () => {
  // Bounds are the API server's to judge (and it ratchets them); the shape is the conversion's.
  const stored: Unstructured = {
    apiVersion: ALPHA,
    kind: "Ptemplate",
    metadata: { name: "x".repeat(60) },
    spec: {
      maxdev: 300,
      requiredDevices: 900,
      defaultmsg: "m".repeat(70),
      selector: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`l${i}`, "v"])),
    },
  };
  const beta = convertPtemplate(stored, BETA);
  expect(beta.spec).toMatchObject({ maxDevices: 300, defaultMessage: "m".repeat(70) });
  expect(convertPtemplate(beta, ALPHA)).toEqual(stored);
});

Deno.test("anything at all either converts and comes back exactly, or is refused in words", () => {
  const keys = fc.constantFrom(
    "maxdev",
    "maxDevices",
    "defaultmsg",
    "consumer",
    "consumerimage",
    "consumerImage",
    "imagePullSecret",
    "imageRepoSecret",
    "selector",
    "constructor",
    "toString",
    "__proto__",
  );
  const spec = fc.oneof(
    fc.anything(),
    fc.dictionary(keys, fc.oneof(fc.anything(), fc.integer({ min: 1, max: 256 }), labels, secret)),
  );
  fc.assert(
    fc.property(spec, fc.constantFrom(ALPHA, BETA), (spec, from) => {
      const object = {
        apiVersion: from,
        kind: "Ptemplate",
        metadata: { name: "p" },
        spec,
      } as Unstructured;
      const to = from === ALPHA ? BETA : ALPHA;
      let there: Unstructured;
      try {
        there = convertPtemplate(object, to);
      } catch (error) {
        // Refused, in our words: never JavaScript's own error.
        expect(error).toBeInstanceOf(ConversionError);
        return;
      }
      expect(convertPtemplate(there, from)).toEqual(object);
    }),
    { numRuns: 2000 },
  );
});
