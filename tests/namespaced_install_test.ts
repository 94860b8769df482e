/**
 * deploy/namespaced against the real control plane: the operator, as its ServiceAccount with
 * Roles in two namespaces only, converges there, leaves a third namespace alone, and is never
 * refused (no 403) nor writes anywhere else.
 */
import { expect } from "expect";
import { KMM_MODULE_CRD_FILE, MODULE } from "../crds/kmm_module.ts";
import { PTEMPLATE } from "../crds/ptemplate.ts";
import type { Unstructured } from "../kube/object.ts";
import { DAEMON_SET, NAMESPACE } from "../kube/kinds.ts";
import { WRITE_VERBS } from "../testing/audit_log.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { kubectlOk } from "./fixtures/kubectl.ts";
import { deploymentArgs, kustomize } from "./fixtures/manifests.ts";
import { OperatorRun } from "./fixtures/operator_command.ts";

const SA = "system:serviceaccount:ptemplate-operator-system:ptemplate-operator";
const WATCHED = ["team-a", "team-b"];

await integrationTest("deploy/namespaced: Roles only, in the namespaces it watches", {
  controllerManager: true,
  scheduler: true,
  kwok: true,
  audit: true,
  crds: [new URL("../crds/ptemplates.pt.example.com.yaml", import.meta.url), KMM_MODULE_CRD_FILE],
}, async (plane, step) => {
  const admin = plane.client();
  const manifests = await kustomize(plane.binaries.kubectl, "deploy/namespaced");

  await step("it grants nothing cluster-wide but asking who may read /metrics", () => {
    // TokenReview and SubjectAccessReview are cluster-scoped by nature and grant no access to
    // any object; the metrics-reader role is a Prometheus's to be bound to.
    expect(
      manifests.filter((m) => /^Cluster/.test(m.kind!)).map((m) => `${m.kind} ${m.metadata?.name}`),
    )
      .toEqual([
        "ClusterRole ptemplate-operator-metrics-auth",
        "ClusterRole ptemplate-operator-metrics-reader",
        "ClusterRoleBinding ptemplate-operator-metrics-auth",
      ]);
    expect(deploymentArgs(manifests)).toEqual(
      expect.arrayContaining(WATCHED.map((ns) => `--namespace=${ns}`)),
    );
  });

  await step("it converges in the watched namespaces and leaves the third alone", async () => {
    for (const name of [...WATCHED, "outside"]) {
      await admin.create(NAMESPACE, { metadata: { name } });
    }
    // As the README says (the namespaces its Roles are in exist first).
    await kubectlOk(plane.binaries.kubectl, plane.adminKubeconfigPath, [
      "apply",
      "-k",
      "deploy/namespaced",
    ]);
    await plane.createNodes({ name: "worker-1", labels: { role: "worker" } });
    const identity = await plane.serviceAccountIdentity(
      "ptemplate-operator-system",
      "ptemplate-operator",
    );
    // The Deployment's own arguments, but serving on loopback ports of the test's choosing.
    const args = deploymentArgs(manifests).filter((a) => !/bind-address|log-format/.test(a));
    const operator = OperatorRun.start([
      ...args,
      `--kubeconfig=${identity.kubeconfigPath}`,
      "--metrics-bind-address=127.0.0.1:0",
      "--health-probe-bind-address=127.0.0.1:0",
    ]);
    try {
      for (const namespace of [...WATCHED, "outside"]) {
        await admin.create(PTEMPLATE, {
          metadata: { name: "pt", namespace },
          spec: { selector: { role: "worker" } },
        } as Unstructured);
      }
      for (const namespace of WATCHED) {
        await eventually(async () => {
          const pt = await admin.get(PTEMPLATE, "pt", { namespace });
          expect(pt.status?.consumers).toHaveLength(1);
          await admin.get(MODULE, "pt", { namespace });
        }, { timeoutMs: 60_000 });
      }
      const outside = await admin.get(PTEMPLATE, "pt", {
        namespace: "outside",
      });
      expect(outside.status).toBeUndefined();
      expect((await admin.list(DAEMON_SET, { namespace: "outside" })).items).toEqual([]);
      expect((await admin.list(MODULE, { namespace: "outside" })).items).toEqual([]);
      const audit = (await plane.auditEvents()).filter((e) => e.user.username === SA);
      // The audit log saw the operator at work: an empty one would prove nothing below.
      expect(audit.filter((e) => WRITE_VERBS.has(e.verb)).length).toBeGreaterThan(0);
      expect(audit.filter((e) => e.responseStatus?.code === 403).map((e) => e.requestURI))
        .toEqual([]);
      const allowed = new Set([...WATCHED, "ptemplate-operator-system"]);
      const elsewhere = audit.filter((e) =>
        WRITE_VERBS.has(e.verb) && e.objectRef?.resource !== "selfsubjectaccessreviews" &&
        !allowed.has(e.objectRef?.namespace ?? "")
      );
      expect(elsewhere.map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
      // Nodes are not read, and the operator says so once.
      expect(operator.lines.map((l) => l.msg)).toContainEqual(
        expect.stringMatching(/^not watching Node: it is cluster-scoped, optional/),
      );
    } finally {
      expect((await operator.stop()).code).toBe(0);
    }
  });
});
