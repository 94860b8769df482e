import { expect } from "expect";
import type { AdmissionContext, AdmissionRequest, AdmissionVerdict } from "../plugin/mod.ts";
import { addedProblems, judgedVerdict, mayRefuse } from "./change_judgement.ts";

type Thing = { metadata: Record<string, unknown>; spec: { size: number }; status?: unknown };
const thing = (size: number, metadata: Record<string, unknown> = {}): Thing => ({
  metadata: { name: "a", ...metadata },
  spec: { size },
});
const update = (object: Thing, oldObject: Thing): AdmissionRequest => ({
  operation: "UPDATE",
  object,
  oldObject,
  dryRun: false,
});
const context = {} as AdmissionContext;
/** A rule added after some objects were stored: size at most 3. */
const atMostThree = (request: AdmissionRequest): AdmissionVerdict =>
  (request.object as Thing).spec.size > 3 ? { denied: "spec.size must be at most 3" } : {};

Deno.test("mayRefuse: creates and spec changes; never what a deletion needs", () => {
  expect(mayRefuse({ operation: "CREATE", object: thing(1), dryRun: false })).toBe(true);
  expect(mayRefuse(update(thing(2), thing(1)))).toBe(true);
  expect(mayRefuse({ operation: "DELETE", oldObject: thing(1), dryRun: false })).toBe(false);
  // Labels, finalizers, owner references, status: metadata and status alone.
  expect(mayRefuse(update(thing(5, { labels: { a: "b" } }), thing(5)))).toBe(false);
  expect(mayRefuse(update(thing(5, { finalizers: [] }), thing(5, { finalizers: ["x/y"] }))))
    .toBe(false);
  expect(mayRefuse(update({ ...thing(5), status: { ok: true } }, thing(5)))).toBe(false);
  // An object being deleted: nothing is refused, whatever changes.
  const deleting = { deletionTimestamp: "2026-12-01T00:00:00Z" };
  expect(mayRefuse(update(thing(9, deleting), thing(5, deleting)))).toBe(false);
});

Deno.test("judgedVerdict: a denial stands on a create and on an update that makes it worse", async () => {
  expect(
    await judgedVerdict(
      atMostThree,
      { operation: "CREATE", object: thing(5), dryRun: false },
      context,
    ),
  )
    .toEqual({ denied: "spec.size must be at most 3" });
  // The old object was fine: the update breaks the rule.
  expect(await judgedVerdict(atMostThree, update(thing(5), thing(2)), context))
    .toEqual({ denied: "spec.size must be at most 3" });
});

Deno.test("judgedVerdict: an object stored before the rule stays writable", async () => {
  // Already 5 before this update, which changes nothing the rule reads.
  const labelled = await judgedVerdict(
    atMostThree,
    update(thing(5, { labels: { a: "b" } }), thing(5)),
    context,
  );
  expect(labelled.denied).toBeUndefined();
  expect(labelled.warnings).toEqual([expect.stringContaining("spec.size must be at most 3")]);
  // Another spec change that keeps the same refusal: not worse, let through with the warning.
  const edited = await judgedVerdict(atMostThree, update(thing(4), thing(5)), context);
  expect(edited.denied).toBeUndefined();
  // Toward validity: no denial at all.
  expect(await judgedVerdict(atMostThree, update(thing(3), thing(5)), context)).toEqual({});
});

Deno.test("judgedVerdict: a different refusal than the old object's is new, and stands", async () => {
  const rules = (request: AdmissionRequest): AdmissionVerdict => {
    const size = (request.object as Thing).spec.size;
    if (size > 8) return { denied: "spec.size must be at most 8" };
    if (size > 3) return { denied: "spec.size must be at most 3" };
    return {};
  };
  expect(await judgedVerdict(rules, update(thing(9), thing(5)), context))
    .toEqual({ denied: "spec.size must be at most 8" });
});

Deno.test("addedProblems: what an update adds to the stored object's problems", () => {
  expect(addedProblems(["a: too long", "b: unknown field"], ["a: too long"]))
    .toEqual(["b: unknown field"]);
  expect(addedProblems(["a: too long"], ["a: too long"])).toEqual([]);
});
