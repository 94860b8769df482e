import { expect } from "expect";
import { ApiError } from "../../kube/errors.ts";
import { describeChange, notServed } from "./applier.ts";
import { PTEMPLATE_OPERATOR } from "../identity/mod.ts";

const HASH_ANNOTATION = PTEMPLATE_OPERATOR.hashAnnotation;

Deno.test("a write loop is described by where it keeps changing, body first", () => {
  const desired = {
    metadata: { labels: { app: "x" }, annotations: { [HASH_ANNOTATION]: "new" } },
    spec: { replicas: 2, template: { spec: { containers: [{ name: "a", image: "v2" }] } } },
  };
  const current = {
    metadata: { labels: { app: "x" }, annotations: { [HASH_ANNOTATION]: "old" } },
    spec: { replicas: 2, template: { spec: { containers: [{ name: "a", image: "v1" }] } } },
  };
  expect(describeChange(desired, current, PTEMPLATE_OPERATOR)).toBe(
    "it keeps changing at spec.template.spec.containers[0].image",
  );
  // Only the labels differ (our own hash is never the news).
  expect(
    describeChange(desired, { ...desired, metadata: { labels: { app: "y" } } }, PTEMPLATE_OPERATOR),
  ).toBe(
    "it keeps changing at metadata.labels.app",
  );
  expect(describeChange({ status: { ready: 1 } }, { status: { ready: 2 } }, PTEMPLATE_OPERATOR))
    .toBe(
      "it keeps changing at status.ready",
    );
  expect(describeChange(desired, desired, PTEMPLATE_OPERATOR)).toBe("it keeps being rewritten");
});

Deno.test("a kind not served: 405 (its CRD terminating), or a 404 that names no object", () => {
  const status = (code: number, details?: { name?: string }) =>
    new ApiError({ code, reason: "x", message: "x", details });
  expect(notServed(status(405))).toBe(true);
  expect(notServed(status(404))).toBe(true);
  expect(notServed(status(404, { name: "child" }))).toBe(false);
  expect(notServed(status(422))).toBe(false);
  expect(notServed(new Error("no"))).toBe(false);
});
