/**
 * `--kube-api-qps` and `--kube-api-burst` bound every request the operator makes: 100 Ptemplates
 * converge, our requests reach the API server no faster than the token bucket lets them leave,
 * and no one-second window of its audit log holds much more than a burst.
 *
 * The audit log records when a request arrived, not when it left: on a busy machine a request may
 * arrive seconds late, so bursts sent windows apart can land in one second. The bounds below
 * allow for LATE_S seconds of that and no more; an unlimited client breaks both by far.
 */
import { expect } from "expect";
import { KMM_MODULE_CRD_FILE, MODULE } from "../crds/kmm_module.ts";
import { PTEMPLATE } from "../crds/ptemplate.ts";
import { DAEMON_SET, NAMESPACE } from "../kube/kinds.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { OperatorRun } from "./fixtures/operator_command.ts";

const COUNT = 100;
const QPS = 5;
const BURST = 10;
/** How late a request may reach the API server after it left, on a busy machine. */
const LATE_S = 2;

await integrationTest("a client-side rate limit bounds every request", {
  audit: true,
  crds: [new URL("../crds/ptemplates.pt.example.com.yaml", import.meta.url), KMM_MODULE_CRD_FILE],
}, async (plane, step) => {
  const admin = plane.client();
  await admin.create(NAMESPACE, { metadata: { name: "qps" } });
  const operator = OperatorRun.start([
    `--kubeconfig=${plane.adminKubeconfigPath}`,
    `--kube-api-qps=${QPS}`,
    `--kube-api-burst=${BURST}`,
    "--leader-elect",
    "--leader-election-namespace=default",
    "--metrics-bind-address=127.0.0.1:0",
    "--health-probe-bind-address=0",
  ]);

  try {
    await step(`${COUNT} Ptemplates converge at ${QPS} requests a second`, async () => {
      for (let i = 0; i < COUNT; i++) {
        await admin.create(PTEMPLATE, {
          metadata: { name: `pt-${i}`, namespace: "qps" },
          spec: { selector: { pool: "qps" } },
        });
      }
      await eventually(async () => {
        const [modules, daemonSets, pts] = await Promise.all([
          admin.list(MODULE, { namespace: "qps" }),
          admin.list(DAEMON_SET, { namespace: "qps" }),
          admin.list(PTEMPLATE, { namespace: "qps" }),
        ]);
        expect(modules.items).toHaveLength(COUNT);
        expect(daemonSets.items).toHaveLength(COUNT);
        expect(pts.items.filter((pt) => pt.status?.observedGeneration === 1)).toHaveLength(COUNT);
      }, { timeoutMs: 300_000, intervalMs: 2_000 });
    });

    await step(
      `our requests arrive at ${QPS} a second, no second holds more than ${1 + LATE_S} bursts`,
      async () => {
        const ours = (await plane.auditEvents())
          .filter((e) => e.userAgent?.startsWith("ptemplate-operator/"))
          .map((e) => Date.parse(e.requestReceivedTimestamp))
          .sort((a, b) => a - b);
        let busiest = 0;
        for (let i = 0, j = 0; i < ours.length; i++) {
          while (ours[i] - ours[j] >= 1_000) j++;
          busiest = Math.max(busiest, i - j + 1);
        }
        const seconds = (ours.at(-1)! - ours[0]) / 1000;
        console.error(
          `    ${ours.length} requests in ${
            Math.round(seconds)
          } s; the busiest second held ${busiest}`,
        );
        expect(ours.length).toBeGreaterThan(3 * COUNT);
        // A token bucket lets at most BURST + QPS·t requests leave in t seconds.
        expect(seconds).toBeGreaterThanOrEqual((ours.length - BURST) / QPS - LATE_S);
        // The limiter lets at most BURST leave in any 1.05 s; one second late folds two windows.
        expect(busiest).toBeLessThanOrEqual(2 * BURST);
        // The waits are exported under client-go's name.
        const port = await operator.port("metrics");
        const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        expect(metrics).toMatch(
          /^rest_client_rate_limiter_duration_seconds_count\{verb="PATCH",host="127\.0\.0\.1:\d+"\} [1-9]/m,
        );
      },
    );
  } finally {
    expect((await operator.stop()).code).toBe(0);
  }
});
