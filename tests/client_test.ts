/** The Kubernetes client against a real API server: identities, verbs, errors, paging, watch. */
import { expect } from "expect";
import type { ConfigMap } from "kubernetes-types/core/v1.d.ts";
import { ApiError } from "../kube/errors.ts";
import { CONFIG_MAP, NAMESPACE, SECRET, SERVICE_ACCOUNT } from "../kube/kinds.ts";
import * as kinds from "../kube/kinds.ts";
import { loadClusterConfig } from "../kube/load_config.ts";
import type { WatchEvent } from "../kube/watch.ts";
import { eventually } from "../testing/eventually.ts";
import { grantClusterAdmin } from "../testing/service_account_identity.ts";
import { integrationTest } from "../testing/integration_test_case.ts";

const NS = "client";
const POD_SELECTING = {
  selector: { matchLabels: { app: "c" } },
  template: {
    metadata: { labels: { app: "c" } },
    spec: { containers: [{ name: "c", image: "registry.invalid/c" }] },
  },
};

async function rejection(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(() => undefined, (e) => e);
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

await integrationTest("client: against a real API server", {
  // ConfigMaps bypass the watch cache so compacting etcd gives 410 at once; other kinds keep it
  // (bookmarks come from the watch cache).
  apiServerFlags: ["--watch-cache-sizes=configmaps#0"],
}, async (plane, step) => {
  const admin = plane.client();
  await admin.create(NAMESPACE, { metadata: { name: NS } });

  // A quiet watch, started now and read at the end: it selects nothing that changes, while
  // other Secrets do, so the server's view moves on and it sends a bookmark to say so. It
  // schedules one a little before the watch's timeout and about once a minute; a short
  // timeout keeps the test quick.
  const quiet = new AbortController();
  const quietEvents: WatchEvent<unknown>[] = [];
  const secrets = await admin.list(SECRET, { namespace: NS });
  const quietWatch = (async () => {
    for await (
      const event of admin.watch(SECRET, {
        namespace: NS,
        labelSelector: "quiet=yes",
        resourceVersion: secrets.metadata.resourceVersion,
        timeoutSeconds: 20,
        signal: quiet.signal,
      })
    ) quietEvents.push(event);
  })();
  await admin.create(SECRET, { metadata: { name: "unrelated", namespace: NS } });

  await step("mTLS admin identity from a kubeconfig file", async () => {
    const config = await loadClusterConfig({ kubeconfig: plane.adminKubeconfigPath });
    expect(config.clientCertData).toContain("BEGIN CERTIFICATE");
    const client = plane.clientFor(config);
    const review = await client.request<
      { status: { userInfo: { username: string; groups: string[] } } }
    >(
      "POST",
      "/apis/authentication.k8s.io/v1/selfsubjectreviews",
      { body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" } },
    );
    expect(review.status.userInfo.groups).toContain("system:masters");
  });

  await step("ServiceAccount token identity; 403 Forbidden without RBAC", async () => {
    const identity = await plane.serviceAccountIdentity(NS, "nobody");
    const config = await loadClusterConfig({ kubeconfig: identity.kubeconfigPath });
    expect(config.token).toBe(identity.token);
    const client = plane.clientFor(config);
    const error = await rejection(client.list(CONFIG_MAP, { namespace: NS }));
    expect(error.code).toBe(403);
    expect(error.reason).toBe("Forbidden");
    expect(error.message).toContain("system:serviceaccount:client:nobody");
    expect(client.requests.samples()).toContainEqual(
      expect.objectContaining({ code: 403, method: "GET", count: 1 }),
    );
  });

  await step("an exec plugin supplies a real token, cached until it expires", async () => {
    const identity = await plane.serviceAccountIdentity(NS, "exec-user");
    await grantClusterAdmin(admin, identity.username);
    const dir = await Deno.makeTempDir({ dir: plane.dir, prefix: "exec-" });
    const expires = new Date(Date.now() + 3600_000).toISOString();
    const script = `${dir}/credential.sh`;
    await Deno.writeTextFile(
      script,
      `#!/bin/sh
echo run >> "${dir}/runs"
[ -n "$KUBERNETES_EXEC_INFO" ] || { echo "no KUBERNETES_EXEC_INFO" >&2; exit 1; }
cat <<EOF
{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
 "status":{"token":"${identity.token}","expirationTimestamp":"${expires}"}}
EOF
`,
      { mode: 0o755 },
    );
    await Deno.writeTextFile(
      `${dir}/config`,
      `apiVersion: v1
kind: Config
current-context: exec
clusters: [{name: c, cluster: {server: "${plane.server}", certificate-authority: ../ca.crt}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: ./credential.sh, interactiveMode: Never}}}]
contexts: [{name: exec, context: {cluster: c, user: u, namespace: ${NS}}}]
`,
    );
    const client = plane.clientFor(await loadClusterConfig({ kubeconfig: `${dir}/config` }));
    await eventually(() => client.list(CONFIG_MAP));
    await client.list(CONFIG_MAP);
    await client.get(NAMESPACE, NS);
    const runs = (await Deno.readTextFile(`${dir}/runs`)).trim().split("\n");
    expect(runs).toHaveLength(1);
  });

  await step("a rotated tokenFile is read again after a 401", async () => {
    const first = await plane.serviceAccountIdentity(NS, "rotating-1");
    const second = await plane.serviceAccountIdentity(NS, "rotating-2");
    for (const identity of [first, second]) await grantClusterAdmin(admin, identity.username);
    const tokenFile = `${plane.dir}/rotating-token`;
    await Deno.writeTextFile(tokenFile, first.token);
    const client = plane.clientFor({ ...first.config, token: undefined, tokenFile });
    await eventually(() => client.get(NAMESPACE, NS));
    // Deleting the ServiceAccount invalidates its bound token: the next request gets a 401.
    await admin.delete(SERVICE_ACCOUNT, "rotating-1", { namespace: NS });
    await Deno.writeTextFile(tokenFile, second.token);
    await eventually(() => client.get(NAMESPACE, NS));
  });

  await step("every built-in kind the operator uses is addressable", async () => {
    for (const resource of Object.values(kinds)) {
      const list = await admin.list(resource, { limit: 1 });
      expect(Array.isArray(list.items)).toBe(true);
    }
  });

  await step(
    "metadata alone: an empty list, a list and a watch of PartialObjectMetadata",
    async () => {
      await admin.create(NAMESPACE, { metadata: { name: "meta-only" } });
      // Empty, the server says `"items": null`: still a list.
      const empty = await admin.list(CONFIG_MAP, { namespace: "meta-only", metadataOnly: true });
      expect(empty.items).toEqual([]);
      await admin.create(CONFIG_MAP, {
        metadata: { name: "m", namespace: "meta-only", labels: { a: "b" } },
        data: { big: "x".repeat(1000) },
      });
      const { items, resourceVersion } = await admin.listAll(CONFIG_MAP, {
        namespace: "meta-only",
        metadataOnly: true,
      });
      expect(items).toHaveLength(1);
      expect(items[0]).toMatchObject({
        kind: "PartialObjectMetadata",
        metadata: { labels: { a: "b" } },
      });
      expect(items[0].data).toBeUndefined();
      const abort = new AbortController();
      const events: WatchEvent<ConfigMap>[] = [];
      const watching = (async () => {
        for await (
          const event of admin.watch(CONFIG_MAP, {
            namespace: "meta-only",
            metadataOnly: true,
            resourceVersion,
            signal: abort.signal,
          })
        ) if (event.type === "MODIFIED") events.push(event);
      })().catch(() => {});
      await admin.patch(CONFIG_MAP, "m", { metadata: { labels: { a: "c" } } }, {
        namespace: "meta-only",
      });
      await eventually(() => expect(events).toHaveLength(1));
      abort.abort();
      await watching;
      expect(events[0].object).toMatchObject({ metadata: { labels: { a: "c" } } });
      expect(events[0].object.data).toBeUndefined();
    },
  );

  await step("404 NotFound; 409 for a stale resourceVersion; 409 AlreadyExists", async () => {
    const missing = await rejection(admin.get(CONFIG_MAP, "absent", { namespace: NS }));
    expect([missing.code, missing.reason]).toEqual([404, "NotFound"]);
    const created = await admin.create(CONFIG_MAP, {
      metadata: { name: "cas", namespace: NS },
      data: { v: "1" },
    });
    await admin.update(CONFIG_MAP, { ...created, data: { v: "2" } });
    const stale = await rejection(
      admin.update(CONFIG_MAP, { ...created, data: { v: "3" } }),
    );
    expect([stale.code, stale.reason]).toEqual([409, "Conflict"]);
    const again = await rejection(
      admin.create(CONFIG_MAP, { metadata: { name: "cas", namespace: NS } }),
    );
    expect([again.code, again.reason]).toEqual([409, "AlreadyExists"]);
  });

  await step(
    "server-side apply: a second manager conflicts without force, wins with it",
    async () => {
      const desired = { metadata: { name: "applied", namespace: NS }, data: { owner: "one" } };
      await admin.apply(CONFIG_MAP, desired, { fieldManager: "manager-one" });
      const conflict = await rejection(
        admin.apply(CONFIG_MAP, { ...desired, data: { owner: "two" } }, {
          fieldManager: "manager-two",
        }),
      );
      expect(conflict.code).toBe(409);
      expect(conflict.reason).toBe("Conflict");
      expect(conflict.causes[0]?.reason).toBe("FieldManagerConflict");
      expect(conflict.causes[0]?.field).toBe(".data.owner");
      const forced = await admin.apply(
        CONFIG_MAP,
        { ...desired, data: { owner: "two" } },
        { fieldManager: "manager-two", force: true },
      );
      expect(forced.data).toEqual({ owner: "two" });
    },
  );

  await step(
    "a create-only apply creates as applied and never writes an object already there",
    async () => {
      const made = { metadata: { name: "create-only", namespace: NS }, data: { a: "1", b: "2" } };
      const created = await admin.apply(CONFIG_MAP, made, {
        fieldManager: "maker",
        createOnly: true,
      });
      expect(created.metadata?.managedFields?.map((e) => `${e.manager} ${e.operation}`))
        .toEqual(["maker Apply"]);
      // The next apply that drops a field removes it: the create's fields are owned as applied.
      const dropped = await admin.apply(CONFIG_MAP, { ...made, data: { a: "1" } }, {
        fieldManager: "maker",
      });
      expect(dropped.data).toEqual({ a: "1" });

      const someoneElses = await admin.create(CONFIG_MAP, {
        metadata: { name: "someone-elses", namespace: NS },
        data: { theirs: "yes" },
      });
      for (
        const [name, was] of [["create-only", dropped], ["someone-elses", someoneElses]] as const
      ) {
        const refused = await rejection(admin.apply(
          CONFIG_MAP,
          { metadata: { name, namespace: NS }, data: { mine: "no" } },
          { fieldManager: "maker", force: true, createOnly: true },
        ));
        expect([refused.code, refused.reason]).toEqual([409, "Conflict"]);
        const now = await admin.get(CONFIG_MAP, name, { namespace: NS });
        expect(now.metadata?.resourceVersion).toBe(was.metadata?.resourceVersion);
      }

      // Kinds whose storage creates in its own way take it too.
      for (
        const [resource, spec] of [
          [kinds.SERVICE, { spec: { ports: [{ port: 80 }] } }],
          [kinds.DAEMON_SET, { spec: POD_SELECTING }],
        ] as const
      ) {
        const object = { metadata: { name: "create-only", namespace: NS }, ...spec };
        const first = await admin.apply(resource, object, {
          fieldManager: "maker",
          createOnly: true,
        });
        expect(first.metadata?.managedFields?.map((e) => e.operation)).toEqual(["Apply"]);
        const again = await rejection(
          admin.apply(resource, object, { fieldManager: "maker", createOnly: true }),
        );
        expect([again.code, again.reason]).toEqual([409, "Conflict"]);
      }
    },
  );

  await step("422 Invalid with a cause naming the field", async () => {
    const invalid = await rejection(
      admin.create(CONFIG_MAP, { metadata: { name: "Not_A_Name", namespace: NS } }),
    );
    expect([invalid.code, invalid.reason]).toEqual([422, "Invalid"]);
    expect(invalid.causes.map((c) => c.field)).toContain("metadata.name");
  });

  await step("merge patch, status subresource, delete with propagation", async () => {
    await admin.create(CONFIG_MAP, {
      metadata: { name: "patched", namespace: NS },
      data: { a: "1", b: "2" },
    });
    const patched = await admin.patch(CONFIG_MAP, "patched", {
      data: { a: null, c: "3" },
    }, {
      namespace: NS,
    });
    expect(patched.data).toEqual({ b: "2", c: "3" });
    // Foreground deletion is carried out by the garbage collector, which this plane does not
    // run: the object stays, marked, which shows the server received the policy.
    await admin.delete(CONFIG_MAP, "patched", { namespace: NS, propagationPolicy: "Foreground" });
    const marked = await admin.get(CONFIG_MAP, "patched", { namespace: NS });
    expect(marked.metadata?.deletionTimestamp).toBeTruthy();
    expect(marked.metadata?.finalizers).toContain("foregroundDeletion");
    await admin.patch(CONFIG_MAP, "patched", { metadata: { finalizers: null } }, { namespace: NS });
    expect((await rejection(admin.get(CONFIG_MAP, "patched", { namespace: NS }))).code).toBe(404);
    const ns = await admin.get(NAMESPACE, NS, { subresource: "status" });
    expect((ns as { status?: { phase?: string } }).status?.phase).toBe("Active");
  });

  await step("objects round-trip: unknown fields and quantities survive", async () => {
    await plane.installCrds({
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "CustomResourceDefinition",
      metadata: { name: "gadgets.test.ptemplate.dev" },
      spec: {
        group: "test.ptemplate.dev",
        names: { kind: "Gadget", plural: "gadgets" },
        scope: "Namespaced",
        versions: [{
          name: "v1",
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
          },
        }],
      },
    });
    const gadgets = {
      group: "test.ptemplate.dev",
      version: "v1",
      kind: "Gadget",
      plural: "gadgets",
      namespaced: true,
    };
    const spec = {
      memory: "1.5Gi",
      nested: { list: [1, "two", { three: 3.25 }] },
      "odd-key": true,
    };
    await admin.create(gadgets, { metadata: { name: "g", namespace: NS }, spec });
    const read = await admin.get(gadgets, "g", { namespace: NS });
    expect(read.spec).toEqual(spec);
    const updated = await admin.update(gadgets, { ...read, extra: "kept" });
    expect(updated.extra).toBe("kept");
    expect(updated.spec).toEqual(spec);
  });

  await step("paging over more objects than limit", async () => {
    for (let i = 0; i < 25; i++) {
      await admin.create(CONFIG_MAP, {
        metadata: { name: `page-${i}`, namespace: NS, labels: { paged: "yes" } },
      });
    }
    const first = await admin.list(CONFIG_MAP, {
      namespace: NS,
      labelSelector: "paged=yes",
      limit: 10,
    });
    expect(first.items).toHaveLength(10);
    expect(first.metadata.continue).toBeTruthy();
    const all = await admin.listAll(CONFIG_MAP, {
      namespace: NS,
      labelSelector: "paged=yes",
      limit: 10,
    });
    expect(all.items.map((c) => c.metadata?.name).sort()).toEqual(
      Array.from({ length: 25 }, (_, i) => `page-${i}`).sort(),
    );
    expect(all.resourceVersion).toMatch(/^\d+$/);
    const selected = await admin.list(CONFIG_MAP, {
      namespace: NS,
      fieldSelector: "metadata.name=page-3",
    });
    expect(selected.items.map((c) => c.metadata?.name)).toEqual(["page-3"]);
  });

  await step(
    "watch: events in order, initial-events-end bookmark, clean end on abort",
    async () => {
      const abort = new AbortController();
      const seen: WatchEvent<ConfigMap>[] = [];
      const done = (async () => {
        for await (
          const event of admin.watch(CONFIG_MAP, {
            namespace: NS,
            labelSelector: "watched=yes",
            sendInitialEvents: true,
            signal: abort.signal,
          })
        ) seen.push(event);
      })();
      await admin.create(CONFIG_MAP, {
        metadata: { name: "w1", namespace: NS, labels: { watched: "yes" } },
      });
      await admin.patch(CONFIG_MAP, "w1", { data: { x: "1" } }, { namespace: NS });
      await admin.delete(CONFIG_MAP, "w1", { namespace: NS });
      await eventually(() => expect(seen.filter((e) => e.type === "DELETED")).toHaveLength(1));
      abort.abort();
      await done; // ends without throwing
      const bookmark = seen.find((e) => e.type === "BOOKMARK");
      expect(bookmark?.object.metadata?.annotations?.["k8s.io/initial-events-end"]).toBe("true");
      expect(seen.filter((e) => e.type !== "BOOKMARK").map((e) => e.type)).toEqual([
        "ADDED",
        "MODIFIED",
        "DELETED",
      ]);
    },
  );

  await step("watch from a compacted resourceVersion fails with 410 Gone", async () => {
    const before = await admin.list(CONFIG_MAP, { namespace: NS });
    await admin.create(CONFIG_MAP, { metadata: { name: "after-list", namespace: NS } });
    await admin.patch(CONFIG_MAP, "after-list", { data: { a: "b" } }, { namespace: NS });
    await plane.compactEtcd();
    const gone = await rejection((async () => {
      for await (
        const _ of admin.watch(CONFIG_MAP, {
          namespace: NS,
          resourceVersion: before.metadata.resourceVersion,
        })
      ) {
        // no event may arrive before the error
      }
    })());
    expect(gone.code).toBe(410);
  });

  await step("bookmarks arrive on a quiet watch", async () => {
    await eventually(
      () => expect(quietEvents.some((e) => e.type === "BOOKMARK")).toBe(true),
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    quiet.abort();
    await quietWatch;
    expect(quietEvents.every((e) => e.type === "BOOKMARK")).toBe(true);
  });
});
