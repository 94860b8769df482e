import { expect } from "expect";
import fc from "fast-check";
import type { Unstructured } from "../mod.ts";
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
  expect(convertPtemplate({ ...beta, apiVersion: "pt.example.com/v1alpha" }, ALPHA).apiVersion)
    .toBe(ALPHA);
});
