/**
 * /metrics passes Prometheus's own lint (client_golang's promlint, what `promtool check metrics`
 * runs) and has the series people graph for Go operators: process_*, controller-runtime's set,
 * the work queue's, client-go's.
 */
import { expect } from "expect";
import { KMM_MODULE_CRD_FILE } from "../crds/kmm_module.ts";
import { PTEMPLATE } from "../crds/ptemplate.ts";
import { KubeClient } from "../kube/client.ts";
import type { Unstructured } from "../kube/object.ts";
import { NAMESPACE } from "../kube/kinds.ts";
import { PTEMPLATE_PLUGINS } from "../reconcilers/mod.ts";
import { Manager } from "../runtime/manager/mod.ts";
import { findBinaries } from "../testing/binaries.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";

const SERIES = [
  "process_resident_memory_bytes",
  "process_cpu_seconds_total",
  "process_open_fds",
  "process_start_time_seconds",
  "controller_runtime_reconcile_total",
  "controller_runtime_reconcile_errors_total",
  "controller_runtime_reconcile_time_seconds_bucket",
  "controller_runtime_reconcile_panics_total",
  "controller_runtime_terminal_reconcile_errors_total",
  "controller_runtime_active_workers",
  "controller_runtime_max_concurrent_reconciles",
  "workqueue_depth",
  "workqueue_adds_total",
  "workqueue_retries_total",
  "workqueue_queue_duration_seconds_bucket",
  "workqueue_work_duration_seconds_bucket",
  "workqueue_unfinished_work_seconds",
  "workqueue_longest_running_processor_seconds",
  "rest_client_requests_total",
  "leader_election_master_status",
];

await integrationTest("/metrics passes promlint and has the series Go operators have", {
  crds: [new URL("../crds/ptemplates.pt.example.com.yaml", import.meta.url), KMM_MODULE_CRD_FILE],
}, async (plane, step) => {
  const admin = plane.client();
  await admin.create(NAMESPACE, { metadata: { name: "metrics" } });
  const client = new KubeClient(plane.adminConfig, { rateLimit: { qps: 100, burst: 200 } });
  const manager = new Manager({
    client,
    plugins: PTEMPLATE_PLUGINS,
    leaderElection: { namespace: "default", name: "metrics-test" },
    metricsBind: { hostname: "127.0.0.1", port: 0 },
  });
  const stop = new AbortController();
  const running = manager.run(stop.signal);
  try {
    await step("after some work, every series is there and promlint finds nothing", async () => {
      await admin.create(PTEMPLATE, {
        metadata: { name: "m", namespace: "metrics" },
        spec: { selector: { role: "worker" } },
      } as Unstructured);
      await eventually(async () => {
        const pt = await admin.get(PTEMPLATE, "m", {
          namespace: "metrics",
        });
        expect(pt.status?.observedGeneration).toBe(1);
      });
      const text = await (await fetch(`http://127.0.0.1:${manager.endpoints.metricsPort}/metrics`))
        .text();
      for (const series of SERIES) expect(text).toMatch(new RegExp(`^${series}[{ ]`, "m"));
      expect(text).toMatch(/^process_resident_memory_bytes [1-9]\d{6,}$/m);
      expect(text).toMatch(/^rest_client_rate_limiter_duration_seconds_count\{verb="PATCH"/m);
      const { promlint } = await findBinaries({ names: ["promlint"] });
      const lint = new Deno.Command(promlint, {
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const writer = lint.stdin.getWriter();
      await writer.write(new TextEncoder().encode(text));
      await writer.close();
      const { code, stdout, stderr } = await lint.output();
      const said = new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr);
      expect({ code, said }).toEqual({ code: 0, said: "" });
    });
  } finally {
    stop.abort();
    await running;
    client.close();
  }
});
