/**
 * A namespaced install across many tenants, against the real control plane: the operator, as its
 * ServiceAccount with a Role in each of 300 namespaces and nothing cluster-wide, given them in
 * WATCH_NAMESPACE (as OLM's OperatorGroup does), runs 60 s after its caches synced (1,800 watches,
 * one per kind and namespace, far past the 100 streams kube-apiserver allows on one connection)
 * without a watch or connection declared dead, reconciles in the listed namespaces, and touches
 * nothing outside them. Allowed to read everywhere as well, it watches each kind once across all
 * namespaces instead, and still keeps to the listed ones.
 */
import { expect } from "expect";
import { KMM_MODULE_CRD_FILE, MODULE } from "../crds/kmm_module.ts";
import { PTEMPLATE } from "../crds/ptemplate.ts";
import { builtInCatalog } from "../cli/plugin_loading/plugin_catalog.ts";
import { rbacManifests } from "../cli/manifests/rbac_manifests.ts";
import type { Unstructured } from "../kube/object.ts";
import { DAEMON_SET, NAMESPACE } from "../kube/kinds.ts";
import { STREAMS_PER_CONNECTION } from "../kube/transport.ts";
import { WRITE_VERBS } from "../testing/audit_log.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { sleep } from "../util/sleep.ts";
import { installAllButDeployment, kustomize } from "./fixtures/manifests.ts";
import { OperatorRun } from "./fixtures/operator_command.ts";

const TENANTS = Array.from({ length: 300 }, (_, i) => `tenant-${i}`);
/** Listed namespaces with a Ptemplate: the first, the last, and some between. */
const BUSY = ["tenant-0", "tenant-71", "tenant-150", "tenant-222", "tenant-299"];
const OUTSIDE = ["outside-a", "outside-b"];
const SA = "system:serviceaccount:ptemplate-operator-system:ptemplate-operator";
const RUN_SECONDS = 60;

await integrationTest("300 namespaces listed: every watch lives, work stays inside them", {
  audit: true,
  crds: [new URL("../crds/ptemplates.pt.example.com.yaml", import.meta.url), KMM_MODULE_CRD_FILE],
}, async (plane, step) => {
  const admin = plane.client();
  for (const name of [...TENANTS, ...OUTSIDE]) {
    await admin.create(NAMESPACE, { metadata: { name } });
  }
  const identity = await plane.serviceAccountIdentity(
    "ptemplate-operator-system",
    "ptemplate-operator",
  );
  // What `ptemplate-operator rbac --namespace …` prints for them: Roles only.
  const plugins = builtInCatalog().filter((e) => e.enabledByDefault).map((e) => e.plugin);
  await installAllButDeployment(admin, rbacManifests(plugins, { namespaces: TENANTS }));
  for (const namespace of [...BUSY, ...OUTSIDE]) {
    await admin.create(PTEMPLATE, {
      metadata: { name: "pt", namespace },
      spec: { selector: { pool: "none" } },
    } as Unstructured);
  }

  const operator = OperatorRun.start([
    "run",
    `--kubeconfig=${identity.kubeconfigPath}`,
    "--metrics-bind-address=127.0.0.1:0",
    "--health-probe-bind-address=127.0.0.1:0",
  ], { env: { WATCH_NAMESPACE: TENANTS.join(",") } });
  try {
    await step(`it syncs, and runs ${RUN_SECONDS} s with no watch declared dead`, async () => {
      await eventually(() => {
        expect(operator.lines.map((l) => l.msg)).toContain("caches synced");
      }, { timeoutMs: 180_000 });
      const informers = operator.lines.find((l) => l.msg.startsWith("waiting for "))!.count;
      // Six namespaced kinds in each namespace; Nodes are cluster-scoped and not granted.
      expect(informers).toBe(TENANTS.length * 6 + 1);
      await sleep(RUN_SECONDS * 1000);
      const metrics = await (await fetch(
        `http://127.0.0.1:${await operator.port("metrics")}/metrics`,
      )).text();
      const sample = (name: string) =>
        Number(new RegExp(`^${name} (\\S+)$`, "m").exec(metrics)?.[1]);
      expect({
        replaced: sample("rest_client_connections_replaced_total"),
        replacedInLog: operator.lines.filter((l) => /^replacing the connection/.test(l.msg)),
        silentWatches: operator.lines.filter((l) => /^watch of .* silent/.test(l.msg)),
        errors: operator.lines.filter((l) => l.level === "error"),
      }).toEqual({ replaced: 0, replacedInLog: [], silentWatches: [], errors: [] });
      // The watches are spread over connections within the server's limit of streams.
      expect(sample("rest_client_connections")).toBeGreaterThanOrEqual(
        Math.ceil(TENANTS.length * 6 / STREAMS_PER_CONNECTION),
      );
      const ready = await fetch(`http://127.0.0.1:${await operator.port("probes")}/readyz`);
      expect([ready.status, await ready.text()]).toEqual([200, "ok"]);
    });

    await step("it reconciled in listed namespaces, and nowhere else", async () => {
      for (const namespace of BUSY) {
        await eventually(async () => {
          const pt = await admin.get(PTEMPLATE, "pt", { namespace });
          expect(pt.status?.observedGeneration).toBe(1);
          await admin.get(MODULE, "pt", { namespace });
          await admin.get(DAEMON_SET, "pt-consumer", { namespace });
        }, { timeoutMs: 30_000 });
      }
      for (const namespace of OUTSIDE) {
        expect((await admin.get(PTEMPLATE, "pt", { namespace })).status).toBeUndefined();
        expect((await admin.list(MODULE, { namespace })).items).toEqual([]);
        expect((await admin.list(DAEMON_SET, { namespace })).items).toEqual([]);
      }
      const audit = (await plane.auditEvents()).filter((e) => e.user.username === SA);
      expect(audit.filter((e) => WRITE_VERBS.has(e.verb)).length).toBeGreaterThan(0);
      // Nothing asked outside its Roles (a cluster-wide list would be refused): no 403 at all.
      expect(audit.filter((e) => e.responseStatus?.code === 403).map((e) => e.requestURI))
        .toEqual([]);
      const allowed = new Set([...TENANTS, "ptemplate-operator-system"]);
      expect(
        audit.filter((e) =>
          WRITE_VERBS.has(e.verb) && e.objectRef?.resource !== "selfsubjectaccessreviews" &&
          !allowed.has(e.objectRef?.namespace ?? "")
        ).map((e) => `${e.verb} ${e.requestURI}`),
      ).toEqual([]);
    });
  } finally {
    expect((await operator.stop()).code).toBe(0);
  }

  await step("allowed to read everywhere, it watches each kind once across them", async () => {
    // deploy/'s ClusterRole besides the Roles; new Ptemplates, made while it is away.
    await installAllButDeployment(admin, await kustomize(plane.binaries.kubectl, "deploy"));
    for (const namespace of ["tenant-5", "outside-c"]) {
      if (namespace === "outside-c") {
        await admin.create(NAMESPACE, { metadata: { name: namespace } });
      }
      await admin.create(PTEMPLATE, {
        metadata: { name: "later", namespace },
        spec: { selector: { pool: "none" } },
      } as Unstructured);
    }
    const across = OperatorRun.start([
      "run",
      `--kubeconfig=${identity.kubeconfigPath}`,
      "--metrics-bind-address=0",
      "--health-probe-bind-address=0",
    ], { env: { WATCH_NAMESPACE: TENANTS.join(",") } });
    try {
      await eventually(async () => {
        const pt = await admin.get(PTEMPLATE, "later", { namespace: "tenant-5" });
        expect(pt.status?.observedGeneration).toBe(1);
        await admin.get(MODULE, "later", { namespace: "tenant-5" });
      }, { timeoutMs: 60_000 });
      const informers = across.lines.find((l) => l.msg.startsWith("waiting for "))!.count;
      // Six kinds (two of them Pods, by two selectors) and Nodes, not 1,801.
      expect(informers).toBe(7);
      expect(across.lines.find((l) => / watched across all namespaces /.test(l.msg))?.each)
        .toBe("no kind");
      for (const namespace of [...OUTSIDE, "outside-c"]) {
        expect((await admin.list(MODULE, { namespace })).items).toEqual([]);
        expect((await admin.list(DAEMON_SET, { namespace })).items).toEqual([]);
        for (const pt of (await admin.list(PTEMPLATE, { namespace })).items) {
          expect(pt.status).toBeUndefined();
        }
      }
    } finally {
      expect((await across.stop()).code).toBe(0);
    }
  });
});
