/**
 * /metrics only for those allowed, against the real API server: the operator, run as deployed
 * (its ServiceAccount, deploy/'s RBAC, the Deployment's arguments), answers 401 without a token or
 * with one the API server does not take, 403 to a ServiceAccount without the metrics-reader role,
 * 200 to one with it, and 405 to anything but GET and HEAD; the audit log shows the TokenReviews
 * and SubjectAccessReviews it asked, each answer cached, and a flood of made-up tokens costs the
 * API server no more than the reviews' budget. Probes stay open. deploy/monitoring's
 * ServiceMonitor and NetworkPolicies render and apply, and point at the ports the operator serves.
 */
import { expect } from "expect";
import { PTEMPLATE_CRD } from "../crds/ptemplate.ts";
import type { Unstructured } from "../kube/object.ts";
import * as kinds from "../kube/kinds.ts";
import { createServingPki } from "../testing/control_plane_pki.ts";
import type { AuditEvent } from "../testing/audit_log.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { deploymentArgs, installAllButDeployment, kustomize } from "./fixtures/manifests.ts";
import { MONITORING_CRDS, PROMETHEUS_RULE, SERVICE_MONITOR } from "./fixtures/monitoring.ts";
import { OperatorRun } from "./fixtures/operator_command.ts";

const SA = "system:serviceaccount:ptemplate-operator-system:ptemplate-operator";

interface Container {
  args: string[];
  ports: { name: string; containerPort: number }[];
}

await integrationTest("/metrics: HTTPS, for those the API server allows", {
  audit: true,
  crds: [PTEMPLATE_CRD, ...MONITORING_CRDS],
}, async (plane, step) => {
  const admin = plane.client();
  let manifests: Unstructured[] = [];

  await step(
    "deploy/monitoring renders and applies: ServiceMonitor, NetworkPolicies, RBAC",
    async () => {
      manifests = await kustomize(plane.binaries.kubectl, "deploy/monitoring");
      const find = (kind: string, name?: string) =>
        manifests.find((m) => m.kind === kind && (!name || m.metadata?.name === name))!;
      const container = (find("Deployment").spec as {
        template: { spec: { containers: Container[] } };
      }).template.spec.containers[0];
      const port = (name: string) => container.ports.find((p) => p.name === name)?.containerPort;
      // The container listens where its arguments say, over HTTPS.
      expect(container.args).toEqual(
        expect.arrayContaining(["--metrics-secure", `--metrics-bind-address=:${port("metrics")}`]),
      );
      // The ServiceMonitor selects the metrics Service and scrapes its port over HTTPS.
      const monitor = find("ServiceMonitor") as Unstructured & {
        spec: {
          selector: { matchLabels: Record<string, string> };
          endpoints: { port: string; scheme: string }[];
        };
      };
      const service = manifests.filter((m) => m.kind === "Service").find((s) =>
        Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) =>
          s.metadata?.labels?.[k] === v
        )
      ) as Unstructured & { spec: { ports: { name: string; targetPort: string }[] } };
      expect(service.metadata?.name).toBe("ptemplate-operator-metrics");
      const servicePort = service.spec.ports.find((p) =>
        p.name === monitor.spec.endpoints[0].port
      )!;
      expect(port(servicePort.targetPort)).toBe(port("metrics"));
      expect(monitor.spec.endpoints[0].scheme).toBe("https");
      // The NetworkPolicy lets the metrics port in, from the monitoring namespace only.
      const policy = find("NetworkPolicy") as Unstructured & {
        spec: { ingress: { from: unknown[]; ports: { port: string }[] }[] };
      };
      expect(policy.spec.ingress).toEqual([{
        from: [{
          namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } },
        }],
        ports: [{ port: "metrics", protocol: "TCP" }],
      }]);
      // Prometheus is bound to the metrics-reader role, which is get on /metrics alone.
      expect(find("ClusterRole", "ptemplate-operator-metrics-reader").rules).toEqual([
        { nonResourceURLs: ["/metrics"], verbs: ["get"] },
      ]);
      await installAllButDeployment(admin, manifests, [SERVICE_MONITOR, PROMETHEUS_RULE]);
      const applied = await admin.get(SERVICE_MONITOR, "ptemplate-operator", {
        namespace: "ptemplate-operator-system",
      });
      expect(applied.spec).toEqual(monitor.spec);
      // The webhook overlay's policy applies too: its port, from outside the pod network.
      const webhooks = await kustomize(plane.binaries.kubectl, "deploy/webhooks/common");
      const webhookPolicy = webhooks.find((m) =>
        m.kind === "NetworkPolicy" && m.metadata?.name === "ptemplate-operator-webhooks"
      )!;
      await admin.apply(kinds.NETWORK_POLICY, webhookPolicy, { fieldManager: "test", force: true });
      const webhookContainer = (webhooks.find((m) => m.kind === "Deployment")!.spec as {
        template: { spec: { containers: Container[] } };
      }).template.spec.containers[0];
      expect(webhookContainer.ports.map((p) => p.name)).toContain(
        (webhookPolicy.spec as { ingress: { ports: { port: string }[] }[] }).ingress[0].ports[0]
          .port,
      );
    },
  );

  const pki = await createServingPki();
  const certDir = await Deno.makeTempDir({ prefix: "metrics-certs-" });
  const { cert, key } = await pki.issue();
  await Deno.writeTextFile(`${certDir}/tls.crt`, cert);
  await Deno.writeTextFile(`${certDir}/tls.key`, key);
  const client = Deno.createHttpClient({ caCerts: [pki.ca.cert] });
  const identity = await plane.serviceAccountIdentity(
    "ptemplate-operator-system",
    "ptemplate-operator",
  );
  // The Deployment's arguments, on loopback ports, with a certificate this test trusts.
  const operator = OperatorRun.start([
    ...deploymentArgs(manifests).filter((a) => !/bind-address|log-format/.test(a)),
    `--kubeconfig=${identity.kubeconfigPath}`,
    `--metrics-cert-dir=${certDir}`,
    "--metrics-bind-address=127.0.0.1:0",
    "--health-probe-bind-address=127.0.0.1:0",
  ]);
  const reviews = async () => {
    const events = (await plane.auditEvents()).filter((e: AuditEvent) =>
      e.user.username === SA && e.verb === "create"
    );
    return {
      tokenReviews: events.filter((e) => e.objectRef?.resource === "tokenreviews"),
      accessReviews: events.filter((e) => e.objectRef?.resource === "subjectaccessreviews"),
    };
  };
  try {
    const metricsPort = await operator.port("metrics");
    const healthPort = await operator.port("probes");
    const url = `https://127.0.0.1:${metricsPort}/metrics`;
    const scrape = async (token?: string, method = "GET") => {
      const response = await fetch(url, {
        method,
        client,
        headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
      });
      return { status: response.status, headers: response.headers, body: await response.text() };
    };
    const prometheus = await plane.serviceAccountIdentity("monitoring", "prometheus-k8s");
    const stranger = await plane.serviceAccountIdentity("default", "stranger");

    await step(
      "no token 401, a token it does not take 401, no permission 403, permission 200",
      async () => {
        expect((await scrape()).status).toBe(401);
        expect((await scrape("not-a-token")).status).toBe(401);
        const forbidden = await scrape(stranger.token);
        expect(forbidden.status).toBe(403);
        expect(forbidden.body).toContain(`user "${stranger.username}" may not get /metrics`);
        const allowed = await scrape(prometheus.token);
        expect(allowed.status).toBe(200);
        expect(allowed.body).toMatch(/^controller_runtime_reconcile_total|^# HELP/m);
        expect((await scrape(prometheus.token, "HEAD")).status).toBe(200);
      },
    );

    await step("anything but GET and HEAD: 405 with Allow, before any review", async () => {
      const before = await reviews();
      for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
        for (const token of [prometheus.token, undefined]) {
          const answer = await scrape(token, method);
          expect({ method, status: answer.status }).toEqual({ method, status: 405 });
          expect(answer.headers.get("allow")).toBe("GET, HEAD");
        }
      }
      const after = await reviews();
      expect(after.tokenReviews.length).toBe(before.tokenReviews.length);
    });

    await step("the probes stay open, in plain HTTP", async () => {
      const ready = await eventually(async () => {
        const response = await fetch(`http://127.0.0.1:${healthPort}/readyz`);
        expect(response.status).toBe(200);
        return response.text();
      });
      // No KMM here: ready, with the note that says its kind is not served.
      expect(ready).toMatch(/readyz check passed/);
      expect(ready).toContain("[+]kinds-served ok: Module");
    });

    await step("the audit log has the reviews, and the answers are cached", async () => {
      const { tokenReviews, accessReviews } = await reviews();
      // Asked as the operator's own identity, with its own client, and answered.
      expect(tokenReviews.length).toBeGreaterThanOrEqual(3);
      expect(accessReviews.length).toBeGreaterThanOrEqual(2);
      for (const event of [...tokenReviews, ...accessReviews]) {
        expect(event.responseStatus?.code).toBe(201);
        expect(event.userAgent).toBe("ptemplate-operator/metrics-auth");
      }
      // The same tokens again: no new review.
      for (let i = 0; i < 20; i++) {
        expect((await scrape(prometheus.token)).status).toBe(200);
        expect((await scrape(stranger.token)).status).toBe(403);
      }
      const again = await reviews();
      expect(again.tokenReviews.length).toBe(tokenReviews.length);
      expect(again.accessReviews.length).toBe(accessReviews.length);
    });

    await step("a flood of made-up tokens costs the API server at most the budget", async () => {
      const before = (await reviews()).tokenReviews.length;
      const started = performance.now();
      const answers: number[] = [];
      for (let wave = 0; wave < 10; wave++) {
        const batch = await Promise.all(
          Array.from({ length: 30 }, () => scrape(crypto.randomUUID()).then((a) => a.status)),
        );
        answers.push(...batch);
      }
      const seconds = (performance.now() - started) / 1000;
      const sent = (await reviews()).tokenReviews.length - before;
      // 20 at once and 10 a second after that (AccessReviewer's default budget), however many.
      expect(sent).toBeLessThanOrEqual(20 + Math.ceil(10 * seconds));
      expect(sent).toBeGreaterThan(0);
      expect(answers.filter((status) => status !== 401 && status !== 503)).toEqual([]);
      // And Prometheus, whose answer is cached, is still served.
      expect((await scrape(prometheus.token)).status).toBe(200);
    });
  } finally {
    client.close();
    expect((await operator.stop()).code).toBe(0);
    await Deno.remove(certDir, { recursive: true });
  }
});
