import { expect } from "expect";
import type { KubeClient } from "../../kube/client.ts";
import { ApiError } from "../../kube/errors.ts";
import { CONFIG_MAP, SECRET, SERVICE } from "../../kube/kinds.ts";
import type { KubeObject } from "../../kube/object.ts";
import { objectRef, refKey } from "../../kube/object_ref.ts";
import type { Resource } from "../../kube/resource.ts";
import { fieldManagerOf, PTEMPLATE_OPERATOR } from "../identity/mod.ts";
import { log, Registry } from "../observe/mod.ts";
import { PermanentError, TemporaryError } from "../plugin/mod.ts";
import { Applier, describeChange, notServed } from "./applier.ts";
import { ControllerMetrics } from "./controller_metrics.ts";
import { stampChild } from "./desired_state.ts";
import { DryRunReport } from "./dry_run_report.ts";
import { FakePool } from "./testdata/fake_pool.ts";
import { WriteLoopGuard } from "./write_loop_guard.ts";

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

// The applier itself, over caches held in memory (testdata/fake_pool.ts) and a client that
// records each write and answers it as sent: which requests it sends, with which preconditions,
// for what the cache shows. That the API server refuses what those preconditions guard against is
// the integration suite's to prove (tests/ownership_test.ts and others).

type Call = { verb: string; what: string; options: Record<string, unknown>; body?: unknown };

/**
 * Our client's write methods, recorded; each answers as sent, at a new version, unless failed. A
 * create-only apply is recorded as a "create".
 */
function recordingClient() {
  const calls: Call[] = [];
  const failures: Record<string, Error[]> = {};
  let version = 100;
  const answer = (verb: string, object: KubeObject) => {
    const error = failures[verb]?.shift();
    if (error) throw error;
    const meta = object.metadata ?? {};
    return {
      ...object,
      metadata: { uid: `uid-${meta.name}`, ...meta, resourceVersion: String(++version) },
    };
  };
  const client = {
    apply: (resource: Resource, object: KubeObject, options: Record<string, unknown>) => {
      const what = `${resource.kind} ${object.metadata?.name}`;
      const verb = options.createOnly ? "create" : "apply";
      calls.push({ verb, what, options, body: object });
      return Promise.resolve().then(() => answer(verb, object));
    },
    delete: (resource: Resource, name: string, options: Record<string, unknown>) => {
      calls.push({ verb: "delete", what: `${resource.kind} ${name}`, options });
      return Promise.resolve().then(() => answer("delete", { metadata: { name } }));
    },
    request: (method: string, path: string, options: { body?: unknown }) => {
      calls.push({ verb: method, what: path, options: {}, body: options.body });
      return Promise.resolve().then(() =>
        answer(method, { metadata: { name: path.split("/").at(-1) } })
      );
    },
  } as unknown as KubeClient;
  return {
    client,
    calls,
    /** The next `verb` fails with `error`. */
    fail(verb: string, error: Error) {
      (failures[verb] ??= []).push(error);
    },
  };
}

const PARENT_KIND: Resource = CONFIG_MAP;
const PLUGIN = "maker";
const MANAGER = fieldManagerOf(PTEMPLATE_OPERATOR, PLUGIN);
const PARENT = {
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name: "p", namespace: "ns", uid: "parent-uid", generation: 3, resourceVersion: "9" },
} as KubeObject;

/** A Secret the plugin returns. */
const secret = (name: string, data: Record<string, string> = {}) =>
  ({ apiVersion: "v1", kind: "Secret", metadata: { name }, stringData: data }) as KubeObject;

/** What the cache holds after the plugin's own apply of `desired` (its field set only). */
function appliedBefore(desired: KubeObject, extra: Partial<KubeObject["metadata"]> = {}) {
  const stamped = stampChild(desired, PARENT, PLUGIN, PTEMPLATE_OPERATOR);
  return {
    ...stamped,
    metadata: {
      ...stamped.metadata,
      uid: `uid-${stamped.metadata?.name}`,
      managedFields: [{ manager: MANAGER, operation: "Apply", fieldsV1: {} }],
      ...extra,
    },
  } as KubeObject;
}

/** An applier for PLUGIN (owning Secrets, and Services it may adopt) over a FakePool. */
function applierOver(
  options: { guard?: WriteLoopGuard; dryRun?: DryRunReport; applied?: string[] } = {},
) {
  const pool = new FakePool();
  const recording = recordingClient();
  const events: string[] = [];
  const applier = new Applier({
    name: PLUGIN,
    operator: PTEMPLATE_OPERATOR,
    for: PARENT_KIND,
    owns: [{ resource: SECRET }, { resource: SERVICE, adopt: true }],
    client: recording.client,
    pool,
    events: { record: (_, event) => events.push(`${event.type} ${event.reason}`) },
    metrics: new ControllerMetrics(new Registry()),
    guard: options.guard ?? new WriteLoopGuard(),
    dryRun: options.dryRun,
    applied: (child) => {
      options.applied?.push(`${child.metadata?.name}@${child.metadata?.resourceVersion}`);
    },
  });
  const applyFor = (parent: KubeObject, ...children: KubeObject[]) =>
    applier.applyChildren(parent, children, new AbortController().signal, log("applier-test"));
  const apply = (...children: KubeObject[]) => applyFor(PARENT, ...children);
  return { pool, applier, apply, applyFor, events, ...recording };
}

const key = (resource: Resource, name: string) =>
  refKey(objectRef(resource, { metadata: { name, namespace: "ns" } }));

Deno.test("a child the cache lacks is created (never applied); one it shows as wanted is not written", async () => {
  const a = applierOver();
  const result = await a.apply(secret("s", { k: "v" }));
  expect(result).toEqual({ problems: [], blocked: [] });
  expect(a.calls.map((c) => `${c.verb} ${c.what}`)).toEqual(["create Secret s"]);
  expect(a.calls[0].options).toMatchObject({ fieldManager: MANAGER });
  // Made for a parent never reported on: no news (its status will say so), no Event.
  expect(a.events).toEqual([]);
  a.pool.put(SECRET, appliedBefore(secret("s", { k: "v" })));
  await a.apply(secret("s", { k: "v" }));
  expect(a.calls.length).toBe(1);
  // Gone (someone deleted it) from a parent that has a status: made again, and said so.
  a.pool.remove(SECRET, { metadata: { name: "s", namespace: "ns" } });
  await a.applyFor({ ...PARENT, status: {} } as KubeObject, secret("s", { k: "v" }));
  expect(a.calls.map((c) => `${c.verb} ${c.what}`)).toEqual(["create Secret s", "create Secret s"]);
  expect(a.events).toEqual(["Normal Created"]);
});

Deno.test("a child of ours that changed is applied as the plugin's manager, forced, guarded by its uid", async () => {
  const a = applierOver();
  const cached = a.pool.put(SECRET, appliedBefore(secret("s", { k: "old" })));
  await a.apply(secret("s", { k: "new" }));
  expect(a.calls.map((c) => `${c.verb} ${c.what}`)).toEqual(["apply Secret s"]);
  expect(a.calls[0].options).toMatchObject({ fieldManager: MANAGER, force: true });
  expect(a.calls[0].body).toMatchObject({
    metadata: { uid: cached.metadata.uid, labels: { [PTEMPLATE_OPERATOR.pluginLabel]: PLUGIN } },
    stringData: { k: "new" },
  });
  expect(a.events).toEqual(["Normal Updated"]);
});

Deno.test("a name taken by another's child or by nobody's is left alone and reported; adopted only where the kind adopts", async () => {
  const a = applierOver();
  const elsewhere = {
    ...secret("theirs"),
    metadata: {
      name: "theirs",
      namespace: "ns",
      ownerReferences: [{
        apiVersion: "v1",
        kind: "ConfigMap",
        name: "q",
        uid: "q",
        controller: true,
      }],
    },
  };
  a.pool.put(SECRET, elsewhere);
  a.pool.put(SECRET, { ...secret("nobodys"), metadata: { name: "nobodys", namespace: "ns" } });
  const service = { apiVersion: "v1", kind: "Service", metadata: { name: "svc" }, spec: {} };
  const loose = a.pool.put(SERVICE, { ...service, metadata: { name: "svc", namespace: "ns" } });
  const result = await a.apply(secret("theirs"), secret("nobodys"), service as KubeObject);
  expect(result.problems.map((p) => `${p.reason} ${p.name}`)).toEqual([
    "ChildOwnedElsewhere theirs",
    "ChildNameTaken nobodys",
  ]);
  expect(result.blocked).toEqual([key(SECRET, "theirs"), key(SECRET, "nobodys")]);
  // Only the adoptable kind is written: applied over the object there, guarded by its uid.
  expect(a.calls.map((c) => `${c.verb} ${c.what}`)).toEqual(["apply Service svc"]);
  expect(a.calls[0].body).toMatchObject({ metadata: { uid: loose.metadata.uid } });
  expect(a.events).toEqual([
    "Warning ChildOwnedElsewhere",
    "Warning ChildNameTaken",
    "Normal Adopted",
  ]);
});

Deno.test("a child being deleted is not written until it is gone", async () => {
  const a = applierOver();
  a.pool.put(
    SECRET,
    appliedBefore(secret("s", { k: "old" }), { deletionTimestamp: "2026-01-01T00:00:00Z" }),
  );
  await a.apply(secret("s", { k: "new" }));
  expect(a.calls).toEqual([]);
});

Deno.test("pruned: this plugin's children of this parent no longer wanted, each deleted by its uid", async () => {
  const a = applierOver();
  a.pool.put(SECRET, appliedBefore(secret("kept")));
  a.pool.put(SECRET, appliedBefore(secret("gone")));
  // Another plugin's child of the same parent, and one the parent owns but does not control.
  const other = appliedBefore(secret("others"));
  other.metadata!.labels = { [PTEMPLATE_OPERATOR.pluginLabel]: "other-plugin" };
  a.pool.put(SECRET, other);
  const owned = appliedBefore(secret("owned"));
  owned.metadata!.ownerReferences = [{ ...owned.metadata!.ownerReferences![0], controller: false }];
  a.pool.put(SECRET, owned);
  await a.apply(secret("kept"));
  expect(a.calls.map((c) => `${c.verb} ${c.what}`)).toEqual(["delete Secret gone"]);
  expect(a.calls[0].options).toMatchObject({ uid: "uid-gone", propagationPolicy: "Background" });
  expect(a.events).toEqual(["Normal Deleted"]);
});

Deno.test("what other managers added to a child is taken out by a patch guarded by the uid, with a Warning", async () => {
  const a = applierOver();
  const cached = appliedBefore(secret("s", { k: "v" }));
  (cached as { stringData: Record<string, string> }).stringData.extra = "theirs";
  cached.metadata!.managedFields!.push({
    manager: "kubectl-edit",
    operation: "Update",
    fieldsV1: { "f:stringData": { "f:extra": {} } },
  });
  a.pool.put(SECRET, cached);
  await a.apply(secret("s", { k: "v" }));
  expect(a.calls.map((c) => c.verb)).toEqual(["PATCH"]);
  expect(a.calls[0].what).toBe("/api/v1/namespaces/ns/secrets/s");
  expect(a.calls[0].body).toEqual(expect.arrayContaining([
    { op: "test", path: "/metadata/uid", value: "uid-s" },
    { op: "remove", path: "/stringData/extra" },
  ]));
  expect(a.events).toEqual(["Warning ForeignFieldsRemoved"]);
});

Deno.test("a child the API server refuses as invalid is reported, and the others are still written", async () => {
  const a = applierOver();
  a.fail(
    "create",
    new ApiError({
      code: 422,
      reason: "Invalid",
      message: "invalid",
      details: { causes: [{ field: "metadata.name", message: "must be a DNS label" }] },
    }),
  );
  const result = await a.apply(secret("Bad_Name"), secret("good"));
  expect(result.problems).toEqual([{
    plugin: PLUGIN,
    kind: "Secret",
    name: "Bad_Name",
    reason: "ChildRefused",
    message:
      "plugin maker: the API server refused Secret Bad_Name: metadata.name must be a DNS label",
  }]);
  expect(a.calls.map((c) => `${c.verb} ${c.what}`)).toEqual([
    "create Secret Bad_Name",
    "create Secret good",
  ]);
  expect(a.events).toEqual(["Warning ChildRefused"]);
});

Deno.test("a write refused because the kind is not served: its caches look again; a temporary error", async () => {
  const a = applierOver();
  const rechecks: string[] = [];
  Object.assign(a.pool.informers(SECRET)[0], { recheck: (why: string) => rechecks.push(why) });
  a.fail(
    "create",
    new ApiError({
      code: 404,
      reason: "NotFound",
      message: "the server could not find the requested resource",
    }),
  );
  const refused = await a.apply(secret("s")).catch((error) => error);
  expect(refused).toBeInstanceOf(TemporaryError);
  expect(refused.message).toMatch(/^Secret \(v1\) is not served by the API server any more/);
  expect(rechecks).toEqual([
    "a write was refused: 404 NotFound: the server could not find the requested resource",
  ]);
  // A 404 naming the object (its namespace gone, say) is no news about the kind.
  a.fail(
    "create",
    new ApiError({ code: 404, reason: "NotFound", message: "x", details: { name: "s" } }),
  );
  await expect(a.apply(secret("s"))).rejects.toThrow("404 NotFound: x");
  expect(rechecks.length).toBe(1);
});

Deno.test("nothing is written for a kind the caches say is not served, nor for one the plugin does not own", async () => {
  const a = applierOver();
  Object.assign(a.pool.informers(SECRET)[0], { installed: false });
  await expect(a.apply(secret("s"))).rejects.toThrow(TemporaryError);
  const configMap = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" } };
  await expect(a.apply(configMap as KubeObject)).rejects.toThrow(
    new PermanentError("maker returned a v1 ConfigMap, which is not in its owns list"),
  );
  expect(a.calls).toEqual([]);
});

Deno.test("a child rewritten again and again without a spec change is paused and reported once", async () => {
  const a = applierOver({ guard: new WriteLoopGuard({ maxWrites: 3, windowMs: 60_000 }) });
  // The cache keeps showing the old version: someone keeps changing it back.
  a.pool.put(SECRET, appliedBefore(secret("s", { k: "old" })));
  const results = [];
  for (let i = 0; i < 5; i++) results.push(await a.apply(secret("s", { k: "new" })));
  expect(a.calls.length).toBe(3);
  expect(results.map((r) => r.problems.map((p) => p.reason))).toEqual([
    [],
    [],
    [],
    ["WriteLoopDetected"],
    ["WriteLoopDetected"],
  ]);
  expect(results[3].retryInMs).toBeGreaterThan(0);
  expect(a.events.filter((e) => e === "Warning WriteLoopDetected")).toHaveLength(1);
});

Deno.test("the status is written only when the cache does not show it, with observedGeneration", async () => {
  const a = applierOver();
  const signal = new AbortController().signal;
  const shown = { ...PARENT, status: { ready: 1, observedGeneration: 3 } } as KubeObject;
  expect(await a.applier.applyStatus(shown, { ready: 1 }, signal)).toEqual({});
  expect(a.calls).toEqual([]);
  await a.applier.applyStatus(shown, { ready: 2 }, signal);
  expect(a.calls.map((c) => `${c.verb} ${c.what}`)).toEqual(["apply ConfigMap p"]);
  expect(a.calls[0].options).toMatchObject({
    subresource: "status",
    fieldManager: MANAGER,
    force: true,
  });
  expect(a.calls[0].body).toEqual({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "p", namespace: "ns", uid: "parent-uid" },
    status: { ready: 2, observedGeneration: 3 },
  });
  a.fail("apply", new Error(".status.phase: field not declared in schema"));
  const refused = await a.applier.applyStatus(shown, { phase: "x" }, signal).catch((e) => e);
  expect(refused).toBeInstanceOf(PermanentError);
  expect(refused.reason).toBe("StatusSchemaMismatch");
});

Deno.test("a dry run tells its report what it would do, and writes no status", async () => {
  const report = new DryRunReport();
  const a = applierOver({ dryRun: report });
  a.pool.put(SECRET, appliedBefore(secret("changed", { k: "old" })));
  a.pool.put(SECRET, appliedBefore(secret("unwanted")));
  await a.apply(secret("new"), secret("changed", { k: "new" }));
  await a.applier.applyStatus(PARENT, { ready: 1 }, new AbortController().signal);
  // Its client sends each write as a server-side dry run; the status is not even sent.
  expect(a.calls.map((c) => `${c.verb} ${c.what}`)).toEqual([
    "create Secret new",
    "apply Secret changed",
    "delete Secret unwanted",
  ]);
  expect(a.events).toEqual([]);
  const [object] = report.objects();
  expect(object.changes.map((c) => `${c.verb} ${c.what}`)).toEqual([
    "create Secret new",
    "update Secret changed",
    "delete Secret unwanted",
    "status status",
  ]);
});

Deno.test("an apply answered as asked is told (its echo is no news to the parent); a dry run's is not", async () => {
  const applied: string[] = [];
  const a = applierOver({ applied });
  a.pool.put(SECRET, appliedBefore(secret("s", { k: "old" })));
  await a.apply(secret("s", { k: "new" }));
  expect(applied).toEqual(["s@101"]);
  // A create is told as made instead, for its visit to decide.
  await a.apply(secret("t"));
  expect(applied).toEqual(["s@101"]);

  const dry: string[] = [];
  const b = applierOver({ applied: dry, dryRun: new DryRunReport() });
  b.pool.put(SECRET, appliedBefore(secret("s", { k: "old" })));
  await b.apply(secret("s", { k: "new" }));
  expect(dry).toEqual([]);
});

Deno.test("the relabelling of a created child's entry, on the way to its apply, is told too", async () => {
  const applied: string[] = [];
  const a = applierOver({ applied });
  a.pool.put(
    SECRET,
    appliedBefore(secret("s", { k: "old" }), {
      managedFields: [{ manager: MANAGER, operation: "Update", fieldsV1: {} }],
    }),
  );
  await a.apply(secret("s", { k: "new" }));
  expect(a.calls.map((c) => c.verb)).toEqual(["PATCH", "apply"]);
  expect(applied).toEqual(["s@101", "s@102"]);
});
