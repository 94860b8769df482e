import { expect } from "expect";
import fc from "fast-check";
import type { KubeObject } from "../../kube/object.ts";
import { Interner } from "./interner.ts";
import { keptVersion } from "./kept_version.ts";
import { projector } from "./projection.ts";

const fieldsV1 = {
  "f:metadata": { "f:labels": { "f:app": {} } },
  "f:spec": {
    "f:selector": {},
    "f:template": {
      "f:spec": { "f:containers": { 'k:{"name":"c"}': { ".": {}, "f:image": {} } } },
    },
  },
};

/** A DaemonSet version: what a watch would bring, with the given labels, image and status. */
const version = (v: { rv: number; app: string; image: string; ready: unknown; extra: unknown }) =>
  ({
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: {
      name: "d",
      namespace: "ns",
      uid: "11111111-2222-3333-4444-555555555555",
      resourceVersion: String(v.rv),
      labels: { app: v.app },
      managedFields: [
        { manager: "ours", operation: "Apply", fieldsV1 },
        { manager: "kube-controller-manager", operation: "Update", subresource: "status" },
      ],
    },
    spec: {
      selector: { matchLabels: { uid: "11111111-2222-3333-4444-555555555555" } },
      template: { spec: { containers: [{ name: "c", image: v.image, args: ["x"] }] } },
    },
    status: { numberReady: v.ready, extra: v.extra },
  }) as unknown as KubeObject;

Deno.test("a version kept beside the one before equals the same version kept alone, whatever changed", () => {
  const options = () => ({
    projector: projector({ fields: ["status"], managed: true }),
    slim: { keepFieldSetsExcept: new Set(["ours"]) },
    interner: new Interner(),
  });
  const change = fc.record({
    app: fc.constantFrom("a", "b"),
    image: fc.constantFrom("i:1", "i:2"),
    ready: fc.jsonValue(),
    extra: fc.jsonValue(),
  });
  fc.assert(fc.property(fc.array(change, { minLength: 1, maxLength: 8 }), (changes) => {
    const beside = options();
    let held: KubeObject | undefined;
    changes.forEach((c, i) => {
      const next = keptVersion(version({ rv: i + 1, ...c }), held, beside);
      const alone = keptVersion(version({ rv: i + 1, ...c }), undefined, options());
      expect(next).toEqual(alone);
      held = next;
    });
  }));
});
