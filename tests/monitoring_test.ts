/**
 * deploy/monitoring against the real API server and a running operator: the overlay applies (the
 * PrometheusRule and the dashboard's ConfigMap with prometheus-operator's CRDs); the operator, run
 * as deployed, reconciles Ptemplates, answers webhooks and is caught in a write loop someone
 * provokes; its /metrics, scraped twice as Prometheus would (with the ServiceMonitor's job), has
 * every metric the alerts and the dashboard name; promtool, evaluating the real rules and every
 * dashboard query on those scrapes, finds data for each query and each alert selector, and the
 * alerts judge the real series: the write loop fires, the 7-day webhook certificate and the
 * failing webhook requests are pending, and a cluster with a leader (or, with --shards, every
 * shard held) raises no leadership alert.
 */
import { expect } from "expect";
import { KMM_MODULE_CRD_FILE } from "../crds/kmm_module.ts";
import { PTEMPLATE, PTEMPLATE_CRD } from "../crds/ptemplate.ts";
import { CONFIG_MAP, DAEMON_SET, EVENT, NAMESPACE } from "../kube/kinds.ts";
import type { Unstructured } from "../kube/object.ts";
import { resourcePath } from "../kube/resource.ts";
import { findBinaries } from "../testing/binaries.ts";
import { createServingPki } from "../testing/control_plane_pki.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { sleep } from "../util/sleep.ts";
import { insecureFetch } from "./fixtures/insecure_fetch.ts";
import { deploymentArgs, installAllButDeployment, kustomize } from "./fixtures/manifests.ts";
import {
  alertRules,
  DASHBOARD_FILE,
  dashboardQueries,
  evaluate,
  type EvaluatedSeries,
  METRICS_JOB,
  MONITORING_CRDS,
  PROMETHEUS_RULE,
  ruleGroups,
  SERVICE_MONITOR,
} from "./fixtures/monitoring.ts";
import { OperatorRun } from "./fixtures/operator_command.ts";
import { exports, parseScrape, type Scrape } from "./fixtures/prometheus_text.ts";
import { matcherLabels, selectors } from "./fixtures/promql_selectors.ts";

const NS = "monitored";
const SYSTEM = "ptemplate-operator-system";
/** The labels Prometheus gives a target of the ServiceMonitor. */
const TARGET = {
  job: METRICS_JOB,
  namespace: SYSTEM,
  service: METRICS_JOB,
  endpoint: "metrics",
  pod: "ptemplate-operator-6d4f9-x2x7q",
  container: "operator",
  instance: "10.0.0.7:8443",
};

/** Two scrapes of one run, a minute apart to promtool, and when the first was taken. */
interface Run {
  name: string;
  start: Date;
  scrapes: Scrape[];
}

await integrationTest("deploy/monitoring: alerts and dashboard on a running operator's metrics", {
  crds: [PTEMPLATE_CRD, KMM_MODULE_CRD_FILE, ...MONITORING_CRDS],
}, async (plane, step) => {
  const admin = plane.client();
  const { promtool } = await findBinaries({ names: ["promtool"] });
  let manifests: Unstructured[] = [];
  const runs: Run[] = [];

  await step(
    "deploy/monitoring applies: the PrometheusRule and the dashboard's ConfigMap",
    async () => {
      manifests = await kustomize(plane.binaries.kubectl, "deploy/monitoring");
      await installAllButDeployment(admin, manifests, [SERVICE_MONITOR, PROMETHEUS_RULE]);
      const rule = await admin.get(PROMETHEUS_RULE, "ptemplate-operator", { namespace: SYSTEM });
      // Nothing pruned or refused by prometheus-operator's schema.
      expect(rule.spec).toEqual(ruleGroups());
      const board = await admin.get(CONFIG_MAP, "ptemplate-operator-dashboard", {
        namespace: SYSTEM,
      });
      expect(board.metadata?.labels?.grafana_dashboard).toBe("1");
      expect(board.data?.["ptemplate-operator.json"]).toBe(Deno.readTextFileSync(DASHBOARD_FILE));
    },
  );

  const pki = await createServingPki();
  const certDir = await Deno.makeTempDir({ prefix: "monitoring-webhook-certs-" });
  const { cert, key } = await pki.issue();
  await Deno.writeTextFile(`${certDir}/tls.crt`, cert);
  await Deno.writeTextFile(`${certDir}/tls.key`, key);
  const webhookClient = Deno.createHttpClient({ caCerts: [pki.ca.cert] });
  const identity = await plane.serviceAccountIdentity(SYSTEM, "ptemplate-operator");
  const prometheus = await plane.serviceAccountIdentity("monitoring", "prometheus-k8s");
  // As deployed (metrics over HTTPS with a self-signed certificate, leader election), on loopback
  // ports, with webhooks served with a certificate of the test's CA (valid 7 days).
  let operator = OperatorRun.start([
    ...deploymentArgs(manifests).filter((a) => !/bind-address|log-format/.test(a)),
    `--kubeconfig=${identity.kubeconfigPath}`,
    "--metrics-bind-address=127.0.0.1:0",
    "--health-probe-bind-address=127.0.0.1:0",
    "--webhook-bind-address=127.0.0.1:0",
    `--webhook-cert-dir=${certDir}`,
  ]);
  try {
    const metricsPort = await operator.port("metrics");
    const webhookPort = await operator.port("webhooks");
    const scrapeText = async () => {
      const answer = await insecureFetch(`https://127.0.0.1:${metricsPort}/metrics`, {
        token: prometheus.token,
      });
      expect(answer.status).toBe(200);
      return answer.body;
    };
    const review = async (body: unknown) => {
      const response = await fetch(
        `https://127.0.0.1:${webhookPort}/validate/status-aggregator`,
        { method: "POST", body: JSON.stringify(body), client: webhookClient },
      );
      await response.body?.cancel();
      return response.status;
    };
    const admissionReview = (name: string) => ({
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      request: {
        uid: crypto.randomUUID(),
        operation: "CREATE",
        namespace: NS,
        name,
        resource: { group: PTEMPLATE.group, version: PTEMPLATE.version, resource: "ptemplates" },
        userInfo: { username: "someone" },
        object: {
          apiVersion: `${PTEMPLATE.group}/${PTEMPLATE.version}`,
          kind: "Ptemplate",
          metadata: { name, namespace: NS },
          spec: { selector: { role: "worker" } },
        },
      },
    });

    await step("the operator at work: Ptemplates, webhook calls, a write loop", async () => {
      await admin.create(NAMESPACE, { metadata: { name: NS } });
      for (const name of ["a", "b", "c"]) {
        await admin.create(PTEMPLATE, {
          metadata: { name, namespace: NS },
          spec: { selector: { role: "worker" } },
        } as Unstructured);
      }
      await eventually(async () => {
        const { items } = await admin.list(PTEMPLATE, { namespace: NS });
        expect(items.map((p) => p.status?.observedGeneration)).toEqual([1, 1, 1]);
      }, { timeoutMs: 60_000 });
      // An answer and a request it cannot read, now and again after the first scrape.
      expect(await review(admissionReview("d"))).toBe(200);
      expect(await review({ kind: "NotAReview" })).toBe(400);
      // Someone keeps adding a field to a's DaemonSet that the operator removes, until the
      // operator pauses its writes to it.
      const path = resourcePath(DAEMON_SET, { namespace: NS, name: "a-consumer" });
      await eventually(() => admin.get(DAEMON_SET, "a-consumer", { namespace: NS }));
      const started = Date.now();
      let caught = false;
      while (!caught) {
        expect(Date.now() - started).toBeLessThan(180_000);
        const ds = await admin.get(DAEMON_SET, "a-consumer", { namespace: NS });
        if (!ds.spec?.template.spec?.hostNetwork) {
          await admin.request("PATCH", path, {
            query: { fieldManager: "fighter" },
            contentType: "application/merge-patch+json",
            body: { spec: { template: { spec: { hostNetwork: true } } } },
          });
        }
        await sleep(100);
        caught = (await admin.list(EVENT, { namespace: NS })).items.some((e) =>
          e.reason === "WriteLoopDetected" && e.involvedObject.name === "a"
        );
      }
    });

    await step("two scrapes, with work between them", async () => {
      const start = new Date();
      const first = parseScrape(await scrapeText());
      await admin.patch(PTEMPLATE, "b", { spec: { defaultmsg: "changed" } }, { namespace: NS });
      expect(await review(admissionReview("e"))).toBe(200);
      expect(await review({ kind: "NotAReview" })).toBe(400);
      await eventually(async () => {
        const b = await admin.get(PTEMPLATE, "b", { namespace: NS });
        expect(b.status?.observedGeneration).toBe(2);
      });
      const second = await scrapeText();
      runs.push({ name: "leader", start, scrapes: [first, parseScrape(second)] });
      // The webhook and certificate metrics too pass Prometheus's lint.
      const { promlint } = await findBinaries({ names: ["promlint"] });
      const lint = new Deno.Command(promlint, { stdin: "piped", stdout: "piped" }).spawn();
      const writer = lint.stdin.getWriter();
      await writer.write(new TextEncoder().encode(second));
      await writer.close();
      const { code, stdout } = await lint.output();
      expect({ code, problems: new TextDecoder().decode(stdout) }).toEqual({
        code: 0,
        problems: "",
      });
    });
  } finally {
    webhookClient.close();
    expect((await operator.stop()).code).toBe(0);
    await Deno.remove(certDir, { recursive: true });
  }

  await step("with --shards, a run of its own: the shard series", async () => {
    operator = OperatorRun.start([
      "run",
      "--leader-elect",
      `--leader-election-namespace=${SYSTEM}`,
      "--shards=2",
      `--kubeconfig=${plane.adminKubeconfigPath}`,
      "--metrics-bind-address=127.0.0.1:0",
      "--health-probe-bind-address=127.0.0.1:0",
    ]);
    try {
      const url = `http://127.0.0.1:${await operator.port("metrics")}/metrics`;
      const scrape = async () => parseScrape(await (await fetch(url)).text());
      // One replica: it takes both shards.
      await eventually(async () => {
        const held = (await scrape()).samples.filter((s) => s.name === "shard_held");
        expect(held.map((s) => s.value)).toEqual(["1", "1"]);
      }, { timeoutMs: 60_000 });
      const start = new Date();
      const first = await scrape();
      await admin.patch(PTEMPLATE, "c", { spec: { defaultmsg: "changed" } }, { namespace: NS });
      await eventually(async () => {
        const c = await admin.get(PTEMPLATE, "c", { namespace: NS });
        expect(c.status?.observedGeneration).toBe(2);
      });
      runs.push({ name: "shards", start, scrapes: [first, await scrape()] });
    } finally {
      expect((await operator.stop()).code).toBe(0);
    }
  });

  await step(
    "every metric an alert or a dashboard query names is exported, with its labels",
    () => {
      const named = [
        ...alertRules().map((r) => ({ where: `alert ${r.alert}`, expr: r.expr })),
        ...dashboardQueries(),
      ].flatMap(({ where, expr }) => selectors(expr).map((s) => ({ where, ...s })));
      expect(named.length).toBeGreaterThan(50);
      const scrapes = runs.flatMap((run) => run.scrapes);
      const missing = named.filter(({ metric }) => !scrapes.some((s) => exports(s, metric)));
      expect(missing.map(({ where, metric }) => ({ where, metric }))).toEqual([]);
      // A label a matcher tests is the target's or the metric's own: a misspelt one would match
      // nothing (or, with != and !~, everything).
      const unknown = named.flatMap(({ where, metric, matchers }) =>
        matcherLabels(matchers).filter((label) =>
          label !== "__name__" && !(label in TARGET) &&
          !scrapes.some((s) => s.samples.some((x) => x.name === metric && label in x.labels))
        ).map((label) => ({ where, metric, label }))
      );
      expect(unknown).toEqual([]);
    },
  );

  // Each run evaluated once: the real alerts, every dashboard query and every alert selector as
  // recording rules.
  const queries = dashboardQueries({ job: METRICS_JOB, rateInterval: "5m" });
  const alertSelectors = [
    ...new Set(alertRules().flatMap((r) => selectors(r.expr).map((s) => s.text))),
  ];
  const evaluated = new Map<string, EvaluatedSeries[]>();
  for (const run of runs) {
    evaluated.set(
      run.name,
      await evaluate(promtool, {
        groups: {
          groups: [...ruleGroups().groups, {
            name: "looked-at",
            rules: [
              ...queries.map((q, i) => ({ record: `dashboard_query_${i}`, expr: q.expr })),
              ...alertSelectors.map((expr, i) => ({ record: `alert_selector_${i}`, expr })),
            ],
          }],
        },
        scrapes: run.scrapes,
        target: TARGET,
        start: run.start,
      }),
    );
  }
  const recorded = (name: string) =>
    [...evaluated.values()].some((series) => series.some((s) => s.labels.__name__ === name));
  const alerts = (run: string) =>
    (evaluated.get(run) ?? []).filter((s) => s.labels.__name__ === "ALERTS").map((s) => {
      const { alertname, alertstate, controller, kind, server, webhook } = s.labels;
      return { alertname, alertstate, controller, kind, server, webhook };
    });

  await step("every dashboard query and every alert selector finds data", () => {
    expect(queries.filter((_, i) => !recorded(`dashboard_query_${i}`))).toEqual([]);
    expect(alertSelectors.filter((_, i) => !recorded(`alert_selector_${i}`))).toEqual([]);
  });

  await step("the alerts judge the real series", () => {
    const leader = alerts("leader");
    expect(leader).toContainEqual(expect.objectContaining({
      alertname: "PtemplateOperatorWriteLoopPaused",
      alertstate: "firing",
      controller: "consumer-daemonset",
      kind: "DaemonSet",
    }));
    // The test CA's certificates live 7 days; the self-signed metrics one a year.
    const expiring = leader.filter((a) => a.alertname === "PtemplateOperatorCertificateExpiring");
    expect(expiring.map((a) => `${a.server} ${a.alertstate}`)).toEqual(["webhooks pending"]);
    // Half the requests between the scrapes could not be read: 400, not 2xx.
    expect(leader).toContainEqual(expect.objectContaining({
      alertname: "PtemplateOperatorWebhookFailing",
      alertstate: "pending",
      webhook: "/validate/status-aggregator",
    }));
    for (const run of ["leader", "shards"]) {
      const leadership = alerts(run).filter((a) =>
        ["PtemplateOperatorNoLeader", "PtemplateOperatorShardUnheld"].includes(a.alertname)
      );
      expect({ run, leadership }).toEqual({ run, leadership: [] });
    }
  });
});
