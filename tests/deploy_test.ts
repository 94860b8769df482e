/**
 * The kustomize base against the real control plane: the operator, running as its ServiceAccount
 * with the deploy/ RBAC and the binary's permissions, converges the sample without a single 403,
 * and every rule it is granted is one it uses (from the API server's audit log).
 */
import { expect } from "expect";
import { parseAllDocuments } from "yaml";
import type { DaemonSet } from "kubernetes-types/apps/v1.d.ts";
import { KMM_MODULE_CRD_FILE, MODULE } from "../crds/kmm_module.ts";
import { PTEMPLATE } from "../crds/ptemplate.ts";
import type { Unstructured } from "../kube/object.ts";
import * as kinds from "../kube/kinds.ts";
import { madeAnObject } from "../testing/audit_log.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { VERSION } from "../cli/release/version.ts";
import { kubectlOk } from "./fixtures/kubectl.ts";
import { deploymentArgs, kustomize } from "./fixtures/manifests.ts";
import { insecureFetch } from "./fixtures/insecure_fetch.ts";
import { OperatorRun, spawnOperator } from "./fixtures/operator_command.ts";

const root = new URL("../", import.meta.url);
const SA = "system:serviceaccount:ptemplate-operator-system:ptemplate-operator";

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

/** "group resource verb" for every permission the rules grant. */
function grants(rules: Rule[]): Set<string> {
  return new Set(
    rules.flatMap((r) =>
      r.apiGroups.flatMap((g) =>
        r.resources.flatMap((res) => r.verbs.map((v) => `${g} ${res} ${v}`))
      )
    ),
  );
}

await integrationTest("deploy/: least-privilege RBAC, exercised by the real operator", {
  controllerManager: true,
  scheduler: true,
  kwok: true,
  audit: true,
  crds: [new URL("../crds/ptemplates.pt.example.com.yaml", import.meta.url), KMM_MODULE_CRD_FILE],
}, async (plane, step) => {
  const admin = plane.client();
  let manifests: Unstructured[] = [];

  await step("kubectl kustomize deploy renders the base, with no wildcard anywhere", async () => {
    manifests = await kustomize(plane.binaries.kubectl, "deploy");
    expect(manifests.map((m) => m.kind).sort()).toEqual([
      "ClusterRole",
      "ClusterRole",
      "ClusterRole",
      "ClusterRoleBinding",
      "ClusterRoleBinding",
      "Deployment",
      "Namespace",
      "NetworkPolicy",
      "Role",
      "RoleBinding",
      "Service",
      "ServiceAccount",
      "ValidatingAdmissionPolicy",
      "ValidatingAdmissionPolicyBinding",
    ]);
    // The leader fence is cluster-wide: kustomize must not give it the operator's namespace.
    expect(
      manifests.filter((m) => m.kind?.startsWith("ValidatingAdmission") && m.metadata?.namespace),
    ).toEqual([]);
    const rules = manifests.flatMap((m) => (m.rules as Rule[] | undefined) ?? []);
    expect(JSON.stringify(rules)).not.toContain("*");
    const deployment = manifests.find((m) => m.kind === "Deployment") as DaemonSet;
    const container = deployment.spec!.template.spec!.containers[0];
    expect(container.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ["ALL"] },
    });
    expect(deployment.spec!.template.spec!.securityContext?.seccompProfile).toEqual({
      type: "RuntimeDefault",
    });
    // The released image of this version (the release checks the tag, deno.json and this alike).
    expect(container.image).toBe(`ghcr.io/ptemplate/ptemplate-operator:v${VERSION}`);
  });

  await step("kubectl kustomize deploy/shards: two shards, and the shard fence", async () => {
    const sharded = await kustomize(plane.binaries.kubectl, "deploy/shards");
    expect(deploymentArgs(sharded)).toContain("--shards=2");
    // In a ring no replica holds the leader's Lease: the leader fence would refuse every write.
    // The shard fence is what `rbac --shards` prints.
    expect(
      sharded.filter((m) => m.kind?.startsWith("ValidatingAdmission")).map((m) => m.metadata?.name),
    ).toEqual(["ptemplate-operator-shard-fence", "ptemplate-operator-shard-fence"]);
    // The base's kinds (one fence in place of the other), and its ring's Role and RoleBinding.
    const kindsOf = (objects: Unstructured[]) => objects.map((m) => m.kind!).sort();
    expect(kindsOf(sharded)).toEqual(
      [
        ...kindsOf(manifests),
        "Role",
        "RoleBinding",
      ]
        .sort(),
    );
  });

  await step("kubectl apply -k deploy installs it, as the README says", async () => {
    await kubectlOk(plane.binaries.kubectl, plane.adminKubeconfigPath, ["apply", "-k", "deploy"]);
    // There is no kubelet: the test runs the Deployment's container itself, below.
    await admin.get(kinds.DEPLOYMENT, "ptemplate-operator", {
      namespace: "ptemplate-operator-system",
    });
  });

  await step("as its ServiceAccount the operator converges the sample with zero 403s", async () => {
    await plane.createNodes({
      name: "worker-1",
      labels: { "node-role.kubernetes.io/worker": "worker" },
    });
    await admin.create(kinds.NAMESPACE, { metadata: { name: "demo" } });
    // As a pod of the Deployment: its token names the pod, and so does POD_NAME (the downward
    // API's), so the leader fence deploy/ installed judges every write it makes.
    const pod = "ptemplate-operator-5d4c8b7f9-x2k7q";
    const identity = await plane.serviceAccountIdentity(
      "ptemplate-operator-system",
      "ptemplate-operator",
      { pod },
    );
    // The Deployment's own arguments, serving on loopback ports of the test's choosing.
    const args = deploymentArgs(manifests).filter((a) => !/bind-address|log-format/.test(a));
    // As deployed: HTTPS, a self-signed certificate, callers checked with the API server.
    expect(args).toEqual(expect.arrayContaining(["run", "--leader-elect", "--metrics-secure"]));
    const operator = OperatorRun.start([
      ...args,
      `--kubeconfig=${identity.kubeconfigPath}`,
      "--metrics-bind-address=127.0.0.1:0",
      "--health-probe-bind-address=127.0.0.1:0",
    ], { env: { POD_NAME: pod } });
    const lines = operator.lines;
    try {
      const metricsPort = await operator.port("metrics");
      // It says where it runs and against which cluster.
      expect(lines.map((l) => l.msg)).toContainEqual(
        expect.stringMatching(/running on a workstation against https:\/\/127\.0\.0\.1:\d+/),
      );
      const sample = await Deno.readTextFile(new URL("../examples/seed.yaml", import.meta.url));
      await admin.create(PTEMPLATE, {
        ...parseAllDocuments(sample)[0].toJS(),
        metadata: { name: "consumer-pod", namespace: "demo" },
      });
      await eventually(async () => {
        const pt = await admin.get(PTEMPLATE, "consumer-pod", {
          namespace: "demo",
        });
        expect(pt.status?.consumers).toHaveLength(1);
        await admin.get(MODULE, "consumer-pod", { namespace: "demo" });
      }, { timeoutMs: 60_000 });

      // Children the plugins made under older names are pruned (the rules' `delete`).
      const pt = await admin.get(PTEMPLATE, "consumer-pod", { namespace: "demo" });
      const strays = [
        {
          resource: kinds.DAEMON_SET,
          plugin: "consumer-daemonset",
          current: "consumer-pod-consumer",
        },
        { resource: MODULE, plugin: "kmm-module", current: "consumer-pod" },
      ];
      for (const { resource, plugin, current } of strays) {
        const live = await admin.get(resource, current, { namespace: "demo" });
        await admin.create(resource, {
          metadata: {
            name: "consumer-pod-old",
            namespace: "demo",
            labels: { "operator.ptemplate.dev/plugin": plugin },
            ownerReferences: [{
              apiVersion: pt.apiVersion!,
              kind: pt.kind!,
              name: "consumer-pod",
              uid: pt.metadata!.uid!,
              controller: true,
            }],
          },
          spec: live.spec,
        } as Unstructured);
      }
      await eventually(async () => {
        for (const { resource } of strays) {
          const gone = await admin.get(resource, "consumer-pod-old", { namespace: "demo" }).catch((
            e,
          ) => e);
          expect(gone.code).toBe(404);
        }
      });
      // A hand edit of the DaemonSet is put back (the rule's daemonsets `patch`).
      await admin.patch(kinds.DAEMON_SET, "consumer-pod-consumer", {
        spec: { template: { spec: { containers: [{ name: "consumer", image: "hand/edit:0" }] } } },
      }, { namespace: "demo" });
      await eventually(async () => {
        const ds = await admin.get(kinds.DAEMON_SET, "consumer-pod-consumer", {
          namespace: "demo",
        });
        expect(JSON.stringify(ds.spec)).not.toContain("hand/edit");
      });
      // A repeated event is aggregated (the rule's events `patch`): edit the Module twice. First
      // let the DaemonSet's news go out: Normal Events about one object are gathered for 2 s
      // into one (runtime/observe/events.ts), which would join the two messages. Its Event is the sign.
      await eventually(async () => {
        const events = await admin.list(kinds.EVENT, { namespace: "demo" });
        expect(events.items.map((e) => (e as { message?: string }).message)).toContainEqual(
          expect.stringContaining("Updated DaemonSet consumer-pod-consumer"),
        );
      });
      for (const image of ["hand/edit:1", "hand/edit:2"]) {
        await admin.patch(MODULE, "consumer-pod", {
          spec: { devicePlugin: { container: { image } } },
        }, { namespace: "demo" });
        await eventually(async () => {
          const module = await admin.get(MODULE, "consumer-pod", {
            namespace: "demo",
          });
          expect(JSON.stringify(module.spec)).not.toContain("hand/edit");
        });
      }
      await eventually(async () => {
        const events = await admin.list(kinds.EVENT, { namespace: "demo" });
        const updated = events.items.find((e) =>
          (e as { message?: string }).message === "Updated Module consumer-pod"
        );
        // One Event whose count went up, rather than one Event per edit.
        expect((updated as { count?: number } | undefined)?.count).toBeGreaterThanOrEqual(2);
      }, { timeoutMs: 30_000 });

      // A Prometheus, as deploy/ lets one read /metrics: its token, the metrics-reader role.
      const prometheus = await plane.serviceAccountIdentity("monitoring", "prometheus");
      await admin.create(kinds.CLUSTER_ROLE_BINDING, {
        metadata: { name: "prometheus-reads-ptemplate-operator" },
        roleRef: {
          apiGroup: "rbac.authorization.k8s.io",
          kind: "ClusterRole",
          name: "ptemplate-operator-metrics-reader",
        },
        subjects: [{ kind: "ServiceAccount", name: "prometheus", namespace: "monitoring" }],
      });
      const metrics = await eventually(async () => {
        const answer = await insecureFetch(`https://127.0.0.1:${metricsPort}/metrics`, {
          token: prometheus.token,
        });
        expect(answer.status).toBe(200);
        return answer.body;
      });
      expect(metrics).toMatch(/rest_client_requests_total\{code="200",method="GET"/);
      expect(metrics).not.toMatch(/rest_client_requests_total\{code="403"/);
      const denied = (await plane.auditEvents()).filter((e) =>
        e.user.username === SA && e.responseStatus?.code === 403
      );
      expect(denied.map((e) => e.requestURI)).toEqual([]);

      // Another pod of the Deployment, not leading: the API server refuses its writes.
      const standby = await plane.serviceAccountIdentity(
        "ptemplate-operator-system",
        "ptemplate-operator",
        { pod: "ptemplate-operator-5d4c8b7f9-q8w3z" },
      );
      // A write its RBAC allows (the API server checks RBAC before admission).
      const refused = await plane.clientFor(standby.config).patch(
        kinds.DAEMON_SET,
        "consumer-pod-consumer",
        { metadata: { labels: { "written-by": "a-standby" } } },
        { namespace: "demo" },
      ).catch((e) => e);
      expect(String(refused.message)).toMatch(
        new RegExp(
          "^403 Forbidden: .*pod ptemplate-operator-5d4c8b7f9-q8w3z does not hold the Lease " +
            `ptemplate-operator-system/ptemplate-operator.pt.example.com \\(${pod}_`,
        ),
      );
    } finally {
      expect((await operator.stop()).code).toBe(0);
    }
  });

  await step("every permission granted was used: none can be removed", async () => {
    // The operator's rules (a Prometheus's metrics-reader role is not the operator's).
    const granted = grants(
      manifests.flatMap((m) => (m.rules as Rule[] | undefined) ?? []).filter((r) => r.apiGroups),
    );
    const used = new Set(
      (await plane.auditEvents())
        .filter((e) => e.user.username === SA && e.objectRef?.resource)
        .flatMap((e) => {
          const ref = e.objectRef!;
          const what = `${ref.apiGroup ?? ""} ${ref.resource}${
            ref.subresource ? `/${ref.subresource}` : ""
          }`;
          // An apply that created the object (201) was also authorized as `create`.
          const created = e.verb === "patch" && madeAnObject(e);
          return created ? [`${what} patch`, `${what} create`] : [`${what} ${e.verb}`];
        }),
    );
    expect([...granted].filter((g) => !used.has(g)).sort()).toEqual([]);
    expect([...used].filter((u) => !granted.has(u)).sort()).toEqual([]);
  });

  await step(
    "deploy/plugin: a plugin by ConfigMap and by image volume, with rbac --plugin's RBAC",
    async () => {
      const file = "deploy/plugin/configmap/key_counter.ts";
      const digest = Array.from(
        new Uint8Array(
          await crypto.subtle.digest("SHA-256", await Deno.readFile(new URL(file, root))),
        ),
        (b) => b.toString(16).padStart(2, "0"),
      ).join("");
      for (const way of ["configmap", "image"]) {
        const rendered = await kustomize(plane.binaries.kubectl, `deploy/plugin/${way}`);
        // The pin the overlay loads the plugin with is the file's digest.
        expect(deploymentArgs(rendered)).toEqual(expect.arrayContaining([
          `--plugin=/plugins/key_counter.ts#sha256=${digest}`,
          "--plugin-isolation=worker",
        ]));
        const applied = await kubectlOk(plane.binaries.kubectl, plane.adminKubeconfigPath, [
          "apply",
          "-k",
          `deploy/plugin/${way}`,
          "--dry-run=server",
          "-o",
          "yaml",
        ]);
        // The API server kept the volume the plugin comes in (it drops fields it does not serve).
        expect(applied.stdout).toContain(
          way === "image" ? "reference: ghcr.io/ptemplate/key-counter-plugin:v1" : "configMap:",
        );
      }
      // Its RBAC is what `rbac --plugin` derives, loading the file as the overlays do: pinned.
      const derived = spawnOperator(["rbac", `--plugin=${file}#sha256=${digest}`]);
      const [status, text] = await Promise.all([
        derived.status,
        new Response(derived.stdout).text(),
        derived.stderr.cancel(),
      ]);
      expect(status.code).toBe(0);
      const plugin = (docs: Unstructured[]) =>
        docs.filter((d) => d.metadata?.name === "ptemplate-operator");
      const shipped = await Deno.readTextFile(
        new URL("deploy/plugin/rbac/cluster_role.yaml", root),
      );
      expect(plugin(parseAllDocuments(shipped).map((d) => d.toJS()))).toEqual(
        plugin(parseAllDocuments(text).map((d) => d.toJS())),
      );
    },
  );
});
