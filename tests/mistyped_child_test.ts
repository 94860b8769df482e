/**
 * A plugin that returns a field of the wrong type (what one that was never type-checked does),
 * against the real API server: its create (a create-only apply) is refused and its apply too
 * (server-side apply answers 500 "failed to create typed patch object … expected string"). Either
 * way the Warning Event, the problem a status plugin reports and the log name the plugin and the
 * child, and the write is not retried in a loop.
 */
import { expect } from "expect";
import { customResourceDefinition } from "../kube/custom_resource_definition.ts";
import { CONFIG_MAP, EVENT, NAMESPACE } from "../kube/kinds.ts";
import type { KubeObject } from "../kube/object.ts";
import type { Resource } from "../kube/resource.ts";
import { definePlugin } from "../runtime/plugin/mod.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { runManager } from "../testing/running_manager.ts";

interface Note extends KubeObject {
  spec: { text: string; mistyped?: boolean };
}

const NOTE: Resource<Note, true> = {
  group: "test.example.com",
  version: "v1",
  kind: "Note",
  plural: "notes",
  namespaced: true,
};
const NOTE_CRD = customResourceDefinition(NOTE, {
  spec: {
    type: "object",
    properties: { text: { type: "string", maxLength: 64 }, mistyped: { type: "boolean" } },
  },
});

/** Copies a Note's text into a ConfigMap; a mistyped one puts a number where a string goes. */
const mistyped = definePlugin({
  name: "mistyped",
  for: NOTE,
  owns: [CONFIG_MAP],
  writesStatus: false,
  reconcile: (note) => ({
    children: [{
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: `${note.metadata.name}-copy` },
      // What a type checker refuses, and an unchecked plugin returns.
      data: { text: note.spec.text, length: (note.spec.mistyped ? 5 : "5") as string },
    }],
  }),
});

const NS = "notes";

await integrationTest(
  "a child of the wrong type: refused, naming the plugin and the child",
  { crds: [NOTE_CRD] },
  async (plane, step) => {
    const admin = plane.client();
    await admin.create(NAMESPACE, { metadata: { name: NS } });
    const refusals = async () =>
      (await admin.list(EVENT, { namespace: NS })).items
        .filter((e) => e.reason === "ChildRefused")
        .map((e) => `${e.involvedObject.name}: ${e.message}`);
    const running = runManager(plane.adminConfig, { plugins: [mistyped] });
    try {
      await step(
        "a create of the wrong type and an apply of it (each a 500) are both named",
        async () => {
          await admin.create(NOTE, {
            metadata: { name: "a", namespace: NS },
            spec: { text: "hi", mistyped: true },
          });
          await admin.create(NOTE, {
            metadata: { name: "b", namespace: NS },
            spec: { text: "hi" },
          });
          await eventually(() => admin.get(CONFIG_MAP, "b-copy", { namespace: NS }));
          await admin.patch(NOTE, "b", { spec: { mistyped: true } }, { namespace: NS });
          await eventually(async () => {
            const said = (await refusals()).join("\n");
            expect(said).toMatch(
              /^a: plugin mistyped: the API server refused ConfigMap a-copy: .*typed patch object.*\(a field of the wrong type: does the plugin's module type-check\?\)$/m,
            );
            expect(said).toMatch(
              /^b: plugin mistyped: the API server refused ConfigMap b-copy: .*typed patch object.*\(a field of the wrong type: does the plugin's module type-check\?\)$/m,
            );
          }, { timeoutMs: 30_000 });
          // Not retried as if the API server were down: the copy is as it was.
          const copy = await admin.get(CONFIG_MAP, "b-copy", { namespace: NS });
          expect(copy.data).toEqual({ text: "hi", length: "5" });
        },
      );
    } finally {
      await running.stop();
    }
  },
);
