/**
 * Finalizers, against the real API server, with the guestbook example plugin: the finalizer is on
 * before anything is made outside the object; deletion waits for `finalize`; a failing `finalize`
 * is retried with backoff and reported; success removes the finalizer and the object goes; and an
 * object whose plugin is not running is freed by removing the finalizer by hand, as the guide says.
 */
import { expect } from "expect";
import type { Stored, Unstructured } from "../kube/object.ts";
import { isApiError } from "../kube/errors.ts";
import { CONFIG_MAP, EVENT, NAMESPACE } from "../kube/kinds.ts";
import {
  GUEST,
  type Guest,
  GUEST_CRD,
  GUESTBOOK,
  guestbookPlugin,
} from "../plugins/guestbook/mod.ts";
import { finalizerOf } from "../runtime/reconcile/mod.ts";
import { PTEMPLATE_OPERATOR } from "../runtime/identity/mod.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { runManager } from "../testing/running_manager.ts";
import { sleep } from "../util/sleep.ts";
import { runDocumented } from "./fixtures/documented_commands.ts";

const NS = "fin";
const FINALIZER = finalizerOf(guestbookPlugin, PTEMPLATE_OPERATOR);
/** The finalizer builds between 0.2 and 0.3 put on guests (their default domain was another). */
const FINALIZER_EARLIER = "operator.ptemplate.dev/guestbook";

await integrationTest("finalizers: deletion waits for finalize, which is retried", {
  crds: [GUEST_CRD],
}, async (plane, step) => {
  const admin = plane.client();
  await admin.create(NAMESPACE, { metadata: { name: NS } });

  const guest = (name: string) => admin.get(GUEST, name, { namespace: NS });
  /** True once the API server says 404; any other error is the test's to hear. */
  const gone = async (name: string) => {
    try {
      await guest(name);
      return false;
    } catch (error) {
      if (isApiError(error, 404)) return true;
      throw error;
    }
  };
  /** How many times guestbook's reconcile (or finalize) failed, from its own metrics. */
  const errors = () =>
    Number(
      operator.manager.registry.render().match(
        /^controller_runtime_reconcile_errors_total\{controller="guestbook"\} (\d+)/m,
      )?.[1] ?? 0,
    );
  const book = () => admin.get(CONFIG_MAP, GUESTBOOK, { namespace: NS });
  const failures = async (name: string) =>
    (await admin.list(EVENT, { namespace: NS })).items.filter((e) =>
      e.involvedObject.name === name && e.reason === "FinalizeFailed"
    );

  /** How many times `finalize` ran, per guest. */
  const finalized = new Map<string, number>();
  const operator = runManager(plane.adminConfig, {
    userAgent: "finalizer-test",
    concurrency: 8,
    plugins: [{
      ...guestbookPlugin,
      finalize: (guest: Stored<Guest, true>, context) => {
        const name = guest.metadata.name;
        finalized.set(name, (finalized.get(name) ?? 0) + 1);
        return guestbookPlugin.finalize!(guest, context);
      },
    }],
  });
  /** The operator has seen what the API server says, and nothing is queued or in flight. */
  const settled = (names: string[]) =>
    eventually(() => {
      for (const name of names) {
        expect(operator.manager.pool.cache(GUEST).get(NS, name)).toBeUndefined();
      }
      const metrics = operator.manager.registry.render();
      expect(metrics).toMatch(/^controller_runtime_active_workers\{controller="guestbook"\} 0$/m);
      expect(metrics).toMatch(/^workqueue_depth\{name="guestbook",priority="edit"\} 0$/m);
    });
  try {
    await step("the finalizer is on before a guest signs the book", async () => {
      for (const [name, greeting] of [["ada", "hello"], ["bob", "hi"]]) {
        await admin.create(GUEST, {
          metadata: { name, namespace: NS },
          spec: { greeting },
        } as Unstructured);
      }
      await eventually(async () =>
        expect((await book()).data).toEqual({ ada: "hello", bob: "hi" })
      );
      expect((await guest("ada")).metadata?.finalizers).toEqual([FINALIZER]);
      expect((await guest("bob")).metadata?.finalizers).toEqual([FINALIZER]);
    });

    await step("deleting a guest signs it out first, then it goes", async () => {
      await admin.delete(GUEST, "bob", { namespace: NS });
      await eventually(() => gone("bob").then((g) => expect(g).toBe(true)));
      await settled(["bob"]);
      expect(finalized.get("bob")).toBe(1);
      expect((await book()).data).toEqual({ ada: "hello" });
      expect(await failures("bob")).toEqual([]);
    });

    await step(
      "a guest holding an earlier build's finalizer is finalized as ours",
      async () => {
        await admin.create(GUEST, {
          metadata: { name: "old", namespace: NS, finalizers: [FINALIZER_EARLIER] },
          spec: { greeting: "from before" },
        } as Unstructured);
        await eventually(async () => expect((await book()).data?.old).toBe("from before"));
        // Ours already: no second finalizer is added beside it.
        expect((await guest("old")).metadata?.finalizers).toEqual([FINALIZER_EARLIER]);
        await admin.delete(GUEST, "old", { namespace: NS });
        await eventually(() => gone("old").then((g) => expect(g).toBe(true)));
        await settled(["old"]);
        expect(finalized.get("old")).toBe(1);
        expect((await book()).data).toEqual({ ada: "hello" });
      },
    );

    await step("each deletion runs finalize once, whatever else happens meanwhile", async () => {
      const names = ["cat", "dan", "eve", "fay"];
      for (const name of names) {
        await admin.create(GUEST, {
          metadata: { name, namespace: NS },
          spec: { greeting: `hi ${name}` },
        } as Unstructured);
      }
      await eventually(async () => expect(Object.keys((await book()).data ?? {})).toHaveLength(5));
      // Every sign-out rewrites the shared book, which wakes every guest of the namespace,
      // the ones being deleted too, while the cache may still hold them.
      await Promise.all(names.map((name) => admin.delete(GUEST, name, { namespace: NS })));
      for (const name of names) {
        await eventually(() => gone(name).then((g) => expect(g).toBe(true)));
      }
      await settled(names);
      expect(Object.fromEntries(names.map((n) => [n, finalized.get(n)]))).toEqual(
        Object.fromEntries(names.map((n) => [n, 1])),
      );
      expect((await book()).data).toEqual({ ada: "hello" });
    });

    await step(
      "a failing finalize holds the object, is retried with backoff and reported",
      async () => {
        // An immutable book refuses every change: signing out fails until it is replaced.
        await admin.patch(CONFIG_MAP, GUESTBOOK, { immutable: true }, { namespace: NS });
        await admin.delete(GUEST, "ada", { namespace: NS });
        const reported = await eventually(async () => {
          const events = await failures("ada");
          expect(events).toHaveLength(1);
          expect(events[0].type).toBe("Warning");
          expect(events[0].message).toMatch(/immutable/i);
          return events[0];
        });
        const failedBefore = errors();
        expect(failedBefore).toBeGreaterThan(0);
        await sleep(8_000);
        // Retried meanwhile, but with backoff (5 ms doubling: about a dozen tries in 8 s).
        expect(errors()).toBeGreaterThan(failedBefore);
        expect(errors()).toBeLessThan(30);
        // Still there, still ours to clean; retried meanwhile (the Event's count), but with backoff:
        // 5 ms doubling gives about a dozen tries in 8 s, not thousands.
        const held = await guest("ada");
        expect(held.metadata?.deletionTimestamp).toBeDefined();
        expect(held.metadata?.finalizers).toEqual([FINALIZER]);
        expect((await book()).data).toEqual({ ada: "hello" });
        const [again] = await failures("ada");
        expect(again.count ?? 1).toBeGreaterThanOrEqual(reported.count ?? 1);
        expect(again.count ?? 1).toBeLessThan(30);
      },
    );

    await step("once finalize succeeds the finalizer goes, and the object with it", async () => {
      // Without the book there is nothing left to erase: signing out succeeds.
      await admin.delete(CONFIG_MAP, GUESTBOOK, { namespace: NS });
      await eventually(() => gone("ada").then((g) => expect(g).toBe(true)), { timeoutMs: 60_000 });
    });

    await step(
      "with the plugin stopped, removing the finalizer by hand frees the object",
      async () => {
        // Ada, the guide's example, comes back (her first visit was finalized above).
        await admin.create(GUEST, {
          metadata: { name: "ada", namespace: NS },
          spec: { greeting: "hey" },
        } as Unstructured);
        await eventually(async () =>
          expect((await guest("ada")).metadata?.finalizers).toEqual([FINALIZER])
        );
        await operator.stop();
        await admin.delete(GUEST, "ada", { namespace: NS });
        await sleep(2_000);
        expect(await gone("ada")).toBe(false);
        // The guide's command, as written, in the test's namespace.
        const out = await runDocumented(
          `kubectl patch guest ada --type=json -p '[{"op":"remove","path":"/metadata/finalizers/0"}]'`,
          {
            kubectl: plane.binaries.kubectl,
            env: { KUBECONFIG: plane.adminKubeconfigPath },
            extraArgs: ["-n", NS],
          },
        );
        expect(out).toMatchObject({ code: 0, stderr: "" });
        await eventually(() => gone("ada").then((g) => expect(g).toBe(true)));
      },
    );
  } finally {
    await operator.stop();
  }
});
