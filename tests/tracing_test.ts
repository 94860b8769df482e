/**
 * Traces reach a real OpenTelemetry Collector (built from pinned Go modules, testing/toolchain/
 * otelcol): the operator as it ships (main.ts with the start task's permissions, OTEL_* set as a
 * user sets them) makes one span per reconcile, with every change folded into it as an event and
 * its time in the queue, and the API requests it made as child spans; its log lines carry the
 * trace id. For the Ptemplate plugins and for a plugin loaded with --plugin alike.
 */
import { expect } from "expect";
import { KMM_MODULE_CRD_FILE } from "../crds/kmm_module.ts";
import { PTEMPLATE, PTEMPLATE_CRD } from "../crds/ptemplate.ts";
import { CONFIG_MAP, NAMESPACE } from "../kube/kinds.ts";
import type { Unstructured } from "../kube/object.ts";
import { GREETING, GREETING_CRD } from "../plugins/greeting/greeting.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { OtelCollector } from "../testing/otel_collector.ts";
import type { FlatSpan } from "../testing/otlp_json.ts";
import { OperatorRun } from "./fixtures/operator_command.ts";

const NS = "traced";

await integrationTest("traces: a span per reconcile, with its causes, requests and logs", {
  crds: [PTEMPLATE_CRD, KMM_MODULE_CRD_FILE, GREETING_CRD],
}, async (plane, step) => {
  const admin = plane.client();
  await admin.create(NAMESPACE, { metadata: { name: NS } });
  const collector = await OtelCollector.start();
  const greeting = new URL("../plugins/greeting/greeting.ts", import.meta.url).pathname;
  const operator = OperatorRun.start([
    `--kubeconfig=${plane.adminKubeconfigPath}`,
    "--metrics-bind-address=127.0.0.1:0",
    "--health-probe-bind-address=127.0.0.1:0",
    `--plugin=${greeting}`,
    "--plugins=+kmm-module,+consumer-daemonset,+status-aggregator",
  ], { env: { ...collector.denoEnv(), OTEL_SERVICE_NAME: "ptemplate-operator-test" } });
  const reconciles = (spans: FlatSpan[], controller: string, object: string) =>
    spans.filter((s) =>
      s.name === `reconcile ${controller}` && s.attributes["reconcile.object"] === object
    );
  try {
    await operator.port("metrics");
    const key = `Ptemplate.pt.example.com/${NS}/pt`;

    await step(
      "an edit that changes a child: its reconcile span, its cause, its requests",
      async () => {
        await admin.create(PTEMPLATE, {
          metadata: { name: "pt", namespace: NS },
          spec: { selector: { role: "worker" }, maxdev: 4 },
        } as Unstructured);
        await eventually(async () => {
          const spans = await collector.spans();
          expect(reconciles(spans, "kmm-module", key).length).toBeGreaterThan(0);
        }, { timeoutMs: 60_000 });
        await admin.patch(PTEMPLATE, "pt", { spec: { maxdev: 6 } }, { namespace: NS });
        const edited = await eventually(async () => {
          const spans = await collector.spans();
          const span = reconciles(spans, "kmm-module", key).find((s) =>
            s.events.some((e) =>
              e.name === "cause: updated" && e.attributes["cause.change"] === "spec"
            ) && Number(s.attributes["reconcile.writes"]) > 0
          );
          expect(span).toBeDefined();
          return { span: span!, spans };
        }, { timeoutMs: 60_000 });
        const { span, spans } = edited;
        expect(span.kind).toBe("internal");
        expect(span.attributes).toMatchObject({
          "reconcile.controller": "kmm-module",
          "reconcile.priority": "edit",
          "reconcile.outcome": "reconciled",
          "reconcile.result": "success",
        });
        expect(typeof span.attributes["reconcile.queue.wait_ms"]).toBe("number");
        const cause = span.events.find((e) => e.name === "cause: updated")!;
        expect(cause.attributes["cause.object"]).toBe(`Ptemplate ${NS}/pt`);
        // The Module's write is a child of the reconcile, and Deno's own fetch span a child of it.
        const requests = spans.filter((s) => s.parentSpanId === span.spanId);
        const write = requests.find((s) => s.name === "PATCH modules");
        expect(write).toMatchObject({ kind: "client", traceId: span.traceId });
        expect(write!.attributes["http.response.status_code"]).toBe(200);
        expect(spans.some((s) => s.parentSpanId === write!.spanId)).toBe(true);
        // The log lines the reconcile wrote carry its trace.
        const logged = operator.lines.filter((l) => l.trace_id === span.traceId);
        expect(logged.map((l) => l.msg)).toContain("updated Module pt");
        expect(logged.every((l) => l.span_id === span.spanId)).toBe(true);
      },
    );

    await step("a plugin loaded with --plugin is traced the same way", async () => {
      await admin.create(GREETING, {
        metadata: { name: "hello", namespace: NS },
        spec: { message: "hi" },
      } as Unstructured);
      await eventually(() => admin.get(CONFIG_MAP, "hello-greeting", { namespace: NS }), {
        timeoutMs: 60_000,
      });
      await eventually(async () => {
        const spans = await collector.spans();
        const span = reconciles(spans, "greeting", `Greeting.example.ptemplate.dev/${NS}/hello`)
          .find((s) => s.events.some((e) => e.name === "cause: created"));
        expect(span).toBeDefined();
        expect(spans.some((s) => s.parentSpanId === span!.spanId && s.kind === "client"))
          .toBe(true);
      }, { timeoutMs: 60_000 });
    });
  } finally {
    expect((await operator.stop()).code).toBe(0);
    await collector.stop();
  }
});
