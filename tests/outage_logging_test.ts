/**
 * An API server outage is quiet: while 100 Ptemplates are being reconciled and the server goes
 * away for 10 s, the operator logs a few lines per cause, not one per retry of every object.
 */
import { expect } from "expect";
import { KMM_MODULE_CRD_FILE } from "../crds/kmm_module.ts";
import { PTEMPLATE } from "../crds/ptemplate.ts";
import { DAEMON_SET, NAMESPACE } from "../kube/kinds.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { sleep } from "../util/sleep.ts";
import { OperatorRun } from "./fixtures/operator_command.ts";

const COUNT = 100;
const OUTAGE_MS = 10_000;
/** Warnings and errors allowed for the whole outage and recovery: "a few dozen" at most. */
const MAX_WARNINGS = 30;

await integrationTest("an API server outage is logged in a few lines", {
  crds: [new URL("../crds/ptemplates.pt.example.com.yaml", import.meta.url), KMM_MODULE_CRD_FILE],
}, async (plane, step) => {
  const admin = plane.client();
  await admin.create(NAMESPACE, { metadata: { name: "outage" } });
  const operator = OperatorRun.start([
    `--kubeconfig=${plane.adminKubeconfigPath}`,
    "--leader-elect",
    "--leader-election-namespace=default",
    "--metrics-bind-address=0",
    "--health-probe-bind-address=0",
  ]);
  const lines = operator.lines;

  try {
    await step(
      `${COUNT} Ptemplates in flight, then ${OUTAGE_MS / 1000} s without the API server`,
      async () => {
        await eventually(() => expect(lines.map((l) => l.msg)).toContain("caches synced"));
        await eventually(() =>
          expect(lines.map((l) => l.msg)).toContainEqual(
            expect.stringMatching(/^became leader/),
          )
        );
        for (let i = 0; i < COUNT; i++) {
          await admin.create(PTEMPLATE, {
            metadata: { name: `pt-${i}`, namespace: "outage" },
            spec: { selector: { pool: "outage" } },
          });
        }
        const from = lines.length;
        const down = Date.now();
        await plane.restartApiServer(OUTAGE_MS);
        const up = Date.now();
        // Everything is done after the outage: each Ptemplate has its DaemonSet.
        await eventually(async () => {
          const list = await admin.list(DAEMON_SET, { namespace: "outage" });
          expect(list.items).toHaveLength(COUNT);
        }, { timeoutMs: 90_000 });
        await sleep(5_000);
        const during = lines.slice(from);
        const warnings = during.filter((l) => l.level === "warning" || l.level === "error");
        console.error(
          `    ${Math.round((up - down) / 1000)} s without the API server: ${warnings.length} ` +
            `warnings and errors, ${during.length} lines in all`,
        );
        expect(warnings.length).toBeGreaterThan(0);
        expect(warnings.map((l) => `${l.level} ${l.msg}`).slice(MAX_WARNINGS)).toEqual([]);
      },
    );
  } finally {
    expect((await operator.stop()).code).toBe(0);
  }
});
