/**
 * The webhooks read only the reviews they serve, as the API server sends them: a table of
 * malformed admission and conversion requests (wrong path for the review, wrong apiVersion, no
 * uid, specs that are not objects, fields named like JavaScript's own, both spellings of a field,
 * deep nesting, huge lists) is each answered 400 or a conversion Failure in our words, and every
 * valid shape goes through `/convert` and back exactly.
 */
import { expect } from "expect";
import fc from "fast-check";
import { PTEMPLATE_CONVERSION } from "../cli/plugin_catalog.ts";
import { PTEMPLATE_CRD } from "../crds/ptemplate.ts";
import type { KubeClient } from "../kube/client.ts";
import type { Unstructured } from "../kube/object.ts";
import { PTEMPLATE_PLUGINS } from "../reconcilers/mod.ts";
import { log } from "../runtime/observe/mod.ts";
import { Store } from "../runtime/cache/mod.ts";
import { WebhookServer } from "../runtime/webhooks/mod.ts";
import { createServingPki } from "../testing/control_plane_pki.ts";

const ALPHA = "pt.example.com/v1alpha1";
const BETA = "pt.example.com/v1beta1";
const VALIDATE = "/validate/status-aggregator";

/** JavaScript's own words, which must never reach a caller. */
const JAVASCRIPT =
  /Cannot read|is not a function|is not iterable|undefined|TypeError|SyntaxError|Unexpected token|JSON\.parse|\.ts:\d/;

const pt = (apiVersion: string, spec: unknown, metadata: Record<string, unknown> = {}) => ({
  apiVersion,
  kind: "Ptemplate",
  metadata: { name: "p", namespace: "n", ...metadata },
  spec,
});
const conversion = (request: unknown, envelope: Record<string, unknown> = {}) => ({
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "ConversionReview",
  request,
  ...envelope,
});
const convert = (objects: unknown[], desiredAPIVersion = BETA) =>
  conversion({ uid: "c1", desiredAPIVersion, objects });
const admission = (request: Record<string, unknown>, envelope: Record<string, unknown> = {}) => ({
  apiVersion: "admission.k8s.io/v1",
  kind: "AdmissionReview",
  request: {
    uid: "a1",
    operation: "CREATE",
    namespace: "n",
    resource: { group: "pt.example.com", version: "v1alpha1", resource: "ptemplates" },
    object: pt(ALPHA, { selector: { a: "b" } }),
    ...request,
  },
  ...envelope,
});
const nested = (depth: number) => "[".repeat(depth) + "]".repeat(depth);

/** Each request, where it goes, and what comes back: a 400 or a Failure whose words match. */
const TABLE: {
  name: string;
  path: string;
  body: unknown;
  answer: 400 | "Failure";
  says: RegExp;
}[] = [
  {
    name: "an AdmissionReview posted to /convert",
    path: "/convert",
    body: admission({}),
    answer: 400,
    says: /^\/convert takes a ConversionReview \(apiextensions\.k8s\.io\/v1\), not AdmissionReview/,
  },
  {
    name: "a ConversionReview posted to /validate",
    path: VALIDATE,
    body: convert([pt(ALPHA, { selector: { a: "b" } })]),
    answer: 400,
    says: /takes an AdmissionReview \(admission\.k8s\.io\/v1\), not ConversionReview/,
  },
  {
    name: "a v1beta1 ConversionReview",
    path: "/convert",
    body: conversion({ uid: "c", desiredAPIVersion: BETA, objects: [] }, {
      apiVersion: "apiextensions.k8s.io/v1beta1",
    }),
    answer: 400,
    says: /takes a ConversionReview \(apiextensions\.k8s\.io\/v1\)/,
  },
  {
    name: "a v1beta1 AdmissionReview",
    path: VALIDATE,
    body: admission({}, { apiVersion: "admission.k8s.io/v1beta1" }),
    answer: 400,
    says: /takes an AdmissionReview \(admission\.k8s\.io\/v1\)/,
  },
  {
    name: "a conversion without a uid",
    path: "/convert",
    body: conversion({ desiredAPIVersion: BETA, objects: [] }),
    answer: 400,
    says: /request\.uid must be/,
  },
  {
    name: "an admission without a uid",
    path: VALIDATE,
    body: admission({ uid: undefined }),
    answer: 400,
    says: /request\.uid must be/,
  },
  {
    name: "a uid that is not a string",
    path: VALIDATE,
    body: admission({ uid: 7 }),
    answer: 400,
    says: /request\.uid must be/,
  },
  {
    name: "no request at all",
    path: "/convert",
    body: conversion(undefined),
    answer: 400,
    says: /has no request/,
  },
  {
    name: "objects that are not a list",
    path: "/convert",
    body: conversion({ uid: "c", desiredAPIVersion: BETA, objects: "all" }),
    answer: 400,
    says: /request\.objects must be a list of objects, not a string/,
  },
  {
    name: "an object that is a string",
    path: "/convert",
    body: convert(["p"]),
    answer: 400,
    says: /request\.objects\[0\] must be an object, not a string/,
  },
  {
    name: "no desired version",
    path: "/convert",
    body: conversion({ uid: "c", objects: [] }),
    answer: 400,
    says: /desiredAPIVersion must be group\/version/,
  },
  {
    name: "a spec that is a string",
    path: "/convert",
    body: convert([pt(ALPHA, "x")]),
    answer: "Failure",
    says: /^objects\[0\] \(p\): spec: must be an object, not a string$/,
  },
  {
    name: "a spec that is a list",
    path: "/convert",
    body: convert([pt(ALPHA, ["x"])]),
    answer: "Failure",
    says: /^objects\[0\] \(p\): spec: must be an object, not a list$/,
  },
  {
    name: "fields named constructor and toString",
    path: "/convert",
    body: convert([pt(ALPHA, { selector: { a: "b" }, constructor: {}, toString: "x" })]),
    answer: "Failure",
    says: /spec\.constructor: unknown field; spec\.toString: unknown field/,
  },
  {
    name: "a field named __proto__",
    path: "/convert",
    body:
      `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"c",` +
      `"desiredAPIVersion":"${BETA}","objects":[{"apiVersion":"${ALPHA}","kind":"Ptemplate",` +
      `"metadata":{"name":"p"},"spec":{"selector":{"a":"b"},"__proto__":{"maxdev":3}}}]}}`,
    answer: "Failure",
    says: /spec\.__proto__: unknown field/,
  },
  {
    name: "v1alpha1's maxdev beside maxDevices in v1beta1",
    path: "/convert",
    body: convert([pt(BETA, { selector: { a: "b" }, maxdev: 300, maxDevices: 5 })], ALPHA),
    answer: "Failure",
    says: /^objects\[0\] \(p\): spec\.maxdev: unknown field$/,
  },
  {
    name: "both spellings of one v1alpha1 field",
    path: "/convert",
    body: convert([pt(ALPHA, { selector: { a: "b" }, consumer: "a/b", consumerimage: "c/d" })]),
    answer: "Failure",
    says: /two spellings of one field/,
  },
  {
    name: "a version that is not served",
    path: "/convert",
    body: convert([pt(ALPHA, { selector: { a: "b" } })], "pt.example.com/v2"),
    answer: "Failure",
    says: /cannot convert a Ptemplate to that version|is not served as pt\.example\.com\/v2/,
  },
  {
    name: "a kind with no conversion",
    path: "/convert",
    body: convert([{ apiVersion: ALPHA, kind: "Secret", metadata: { name: "s" } }]),
    answer: "Failure",
    says: /no conversion is served for "pt\.example\.com\/v1alpha1" Secret/,
  },
  {
    name: "another group",
    path: "/convert",
    body: convert([{ apiVersion: "v1", kind: "Secret", metadata: { name: "s" } }]),
    answer: "Failure",
    says: /cannot convert "v1" to another group/,
  },
  {
    name: "annotations that are not strings",
    path: "/convert",
    body: convert([pt(ALPHA, { selector: { a: "b" } }, { annotations: { a: { b: 1 } } })]),
    answer: "Failure",
    says: /metadata\.annotations\.a: must be a string, not an object/,
  },
  {
    name: "deep nesting",
    path: "/convert",
    body: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":` +
      `{"uid":"c","desiredAPIVersion":"${BETA}","objects":${nested(10_000)}}}`,
    answer: 400,
    says: /^the JSON nests deeper than 64 levels$/,
  },
  {
    name: "deep nesting in an admission",
    path: VALIDATE,
    body: JSON.stringify(admission({})).replace('"a":"b"', `"a":${nested(100)}`),
    answer: 400,
    says: /^the JSON nests deeper than 64 levels$/,
  },
  {
    name: "a huge list",
    path: "/convert",
    body: JSON.stringify(convert(new Array(600_000).fill({}))),
    answer: 400,
    says: /^the JSON has more than 500000 values$/,
  },
  {
    name: "a huge list inside an object",
    path: "/convert",
    body: convert([pt(ALPHA, { selector: new Array(50_000).fill("x") })]),
    answer: "Failure",
    says: /spec\.selector: must be an object, not a list/,
  },
  {
    name: "not JSON",
    path: "/convert",
    body: '{"apiVersion": ',
    answer: 400,
    says: /^the body is not JSON \(UTF-8\)$/,
  },
  {
    name: "not UTF-8",
    path: VALIDATE,
    body: new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
    answer: 400,
    says: /^the body is not JSON \(UTF-8\)$/,
  },
  {
    name: "a list instead of a review",
    path: VALIDATE,
    body: [admission({})],
    answer: 400,
    says: /^the body must be an AdmissionReview, not a list$/,
  },
  {
    name: "an admission of another kind",
    path: VALIDATE,
    body: admission({ resource: { group: "", version: "v1", resource: "secrets" } }),
    answer: 400,
    says: /this webhook admits ptemplates\.pt\.example\.com, not secrets\.core/,
  },
  {
    name: "an object in another namespace than the request's",
    path: VALIDATE,
    body: admission({ object: pt(ALPHA, { selector: { a: "b" } }, { namespace: "kube-system" }) }),
    answer: 400,
    says: /request\.object\.metadata\.namespace is not the request's namespace/,
  },
  {
    name: "an admitted spec that is a string",
    path: VALIDATE,
    body: admission({ object: pt(ALPHA, "x") }),
    answer: 400,
    says: /^request\.object: spec: must be an object, not a string$/,
  },
  {
    name: "an admitted spec with prototype-named fields",
    path: VALIDATE,
    body: admission({ object: pt(ALPHA, { selector: { a: "b" }, constructor: 1 }) }),
    answer: 400,
    says: /spec\.constructor: unknown field/,
  },
  {
    name: "an admitted v1beta1 object with a v1alpha1 spelling",
    path: VALIDATE,
    body: admission({ object: pt(BETA, { selector: { a: "b" }, maxdev: 300, maxDevices: 5 }) }),
    answer: 400,
    says: /spec\.maxdev: unknown field/,
  },
  {
    name: "an operation that does not exist",
    path: VALIDATE,
    body: admission({ operation: "EXPLODE" }),
    answer: 400,
    says: /request\.operation must be CREATE, UPDATE, DELETE or CONNECT/,
  },
  {
    name: "a userInfo that is not one",
    path: VALIDATE,
    body: admission({ userInfo: { username: ["root"] } }),
    answer: 400,
    says: /request\.userInfo must be/,
  },
  {
    name: "an admitted object that is a list",
    path: VALIDATE,
    body: admission({ object: [] }),
    answer: 400,
    says: /request\.object must be an object, not a list/,
  },
];

const pki = await createServingPki();
const serving = await pki.issue();

async function withServer(
  fn: (
    post: (path: string, body: unknown, method?: string) => Promise<Response>,
  ) => Promise<void>,
) {
  const server = new WebhookServer({
    bind: { hostname: "127.0.0.1", port: 0 },
    plugins: PTEMPLATE_PLUGINS,
    conversions: [PTEMPLATE_CONVERSION],
    crds: [PTEMPLATE_CRD],
    certificate: () => Promise.resolve(serving),
    context: {
      client: {} as KubeClient,
      cache: (resource) => new Store(resource),
      installed: () => true,
      log: log("test"),
    },
    log: log("test"),
  });
  await server.start();
  const client = Deno.createHttpClient({ caCerts: [pki.ca.cert] });
  try {
    await fn((path, body, method = "POST") =>
      fetch(`https://127.0.0.1:${server.port}${path}`, {
        method,
        body: method === "GET"
          ? undefined
          : typeof body === "string" || body instanceof Uint8Array
          ? body as string | Uint8Array<ArrayBuffer>
          : JSON.stringify(body),
        client,
      })
    );
  } finally {
    client.close();
    await server.stop();
  }
}

Deno.test("malformed reviews: each is a 400 or a Failure, in our words", async () => {
  await withServer(async (post) => {
    for (const row of TABLE) {
      const response = await post(row.path, row.body);
      if (row.answer === 400) {
        const text = (await response.text()).trimEnd();
        expect({ row: row.name, status: response.status }).toEqual({ row: row.name, status: 400 });
        expect({ row: row.name, text }).toEqual({
          row: row.name,
          text: expect.stringMatching(row.says),
        });
        expect(text).not.toMatch(JAVASCRIPT);
      } else {
        expect({ row: row.name, status: response.status }).toEqual({ row: row.name, status: 200 });
        const review = await response.json();
        // Only v1 is served, whatever was asked.
        expect(review.apiVersion).toBe("apiextensions.k8s.io/v1");
        expect(["c", "c1"]).toContain(review.response.uid);
        expect({ row: row.name, result: review.response.result }).toEqual({
          row: row.name,
          result: { status: "Failure", message: expect.stringMatching(row.says) },
        });
        expect(review.response.result.message).not.toMatch(JAVASCRIPT);
        expect(review.response.convertedObjects).toEqual([]);
      }
    }
  });
});

Deno.test("other paths and methods: 404 and 405", async () => {
  await withServer(async (post) => {
    for (const path of ["/validate/nobody", "/mutate/status-aggregator", "/", "/convert/x"]) {
      const response = await post(path, convert([]));
      expect({ path, status: response.status }).toEqual({ path, status: 404 });
      await response.body?.cancel();
    }
    for (const method of ["GET", "PUT", "DELETE"]) {
      const response = await post("/convert", convert([]), method);
      expect({ method, status: response.status }).toEqual({ method, status: 405 });
      expect(response.headers.get("allow")).toBe("POST");
      await response.body?.cancel();
    }
  });
});

Deno.test("every valid shape goes through /convert and back exactly", async () => {
  const image = fc.constantFrom("quay.io/org/image:tag", "registry.example:5000/a/b");
  const secret = fc.record({ name: fc.constantFrom("pull", "pt-char-pull-secret") });
  const spec = fc.record({
    maxdev: fc.integer({ min: 1, max: 256 }),
    defaultmsg: fc.stringMatching(/^[A-Za-z0-9._:+-]{1,64}$/),
    consumerimage: image,
    consumer: image,
    deviceplugin: image,
    requiredDevices: fc.constant(1),
    imageRepoSecret: secret,
    imagePullSecret: secret,
    selector: fc.dictionary(
      fc.constantFrom("role", "example.com/zone"),
      fc.constantFrom("a", "w"),
      {
        minKeys: 1,
      },
    ),
  }, { requiredKeys: ["selector"] }).map((s) => {
    const out: Record<string, unknown> = { ...s };
    if ("consumerimage" in out) delete out.consumer;
    if ("imageRepoSecret" in out) delete out.imagePullSecret;
    return out;
  });
  await withServer(async (post) => {
    const objects = fc.sample(spec, 200).map((s, i) =>
      pt(ALPHA, s, i % 3 ? {} : { annotations: { note: `n${i}` } }) as Unstructured
    );
    const there = await (await post("/convert", convert(objects, BETA))).json();
    expect(there.response.result).toEqual({ status: "Success" });
    const back = await (await post("/convert", convert(there.response.convertedObjects, ALPHA)))
      .json();
    expect(back.response.result).toEqual({ status: "Success" });
    expect(back.response.convertedObjects).toEqual(objects);
  });
});
