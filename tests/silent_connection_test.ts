/**
 * A connection that dies without a FIN or RST (a black hole: a NAT or firewall that forgot it)
 * is noticed and replaced, so the operator recovers within seconds of the network coming back,
 * and its probes tell the truth meanwhile.
 */
import { expect } from "expect";
import { CONFIG_MAP, NAMESPACE } from "../kube/kinds.ts";
import { kubeconfigYaml } from "../kube/kubeconfig_yaml.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { TcpProxy } from "../testing/tcp_proxy.ts";
import { sleep } from "../util/sleep.ts";
import { CONFIG_SET, CONFIG_SET_CRD } from "./fixtures/config_set.ts";
import { OperatorProcess } from "./fixtures/operator_process.ts";

const NS = "silent";
/**
 * What we promise: a silent connection is replaced within 15 s of its last answer (10 s without
 * one, then 5 s for a /livez that gets none; sooner when lease renewals time out), and a change
 * made once the network is back converges within 30 s of that.
 */
const CONVERGE_BOUND_MS = 30_000;
/** The operator's /healthz gives up after this long without an answer (60 s by default). */
const UNHEALTHY_AFTER_MS = 20_000;

await integrationTest("a connection that dies in silence is replaced", {
  crds: [CONFIG_SET_CRD],
}, async (plane, step) => {
  const admin = plane.client();
  await admin.create(NAMESPACE, { metadata: { name: NS } });
  const proxy = new TcpProxy({ hostname: "127.0.0.1", port: Number(new URL(plane.server).port) });
  const kubeconfig = `${plane.dir}/via-proxy.kubeconfig`;
  await Deno.writeTextFile(
    kubeconfig,
    kubeconfigYaml({ ...plane.adminConfig, server: `https://127.0.0.1:${proxy.port}` }),
  );
  const operator = OperatorProcess.start(kubeconfig, "s", `${plane.dir}/operator-s.log`, {
    unhealthyAfterMs: UNHEALTHY_AFTER_MS,
  });
  const child = (name: string) => admin.get(CONFIG_MAP, name, { namespace: NS });
  const converges = async (name: string) => {
    const started = Date.now();
    await admin.create(CONFIG_SET, {
      metadata: { name, namespace: NS },
      spec: { entries: { k: name } },
    });
    await eventually(() => child(`${name}-k`), { timeoutMs: CONVERGE_BOUND_MS });
    return Date.now() - started;
  };

  try {
    await step("converges before anything goes wrong", async () => {
      await eventually(() => expect(operator.leading).toBe(true), { timeoutMs: 60_000 });
      await converges("before");
    });

    await step("after a 5 s black hole, a later change converges without a restart", async () => {
      proxy.blackhole();
      await sleep(5_000);
      proxy.unblock();
      const took = await converges("after");
      console.error(`    a change made after the black hole converged in ${took} ms`);
      expect(operator.exited).toBe(false);
      expect(operator.events.filter((e) => e.event === "started")).toHaveLength(1);
    });

    await step("a long black hole: /readyz fails soon, /healthz later; both recover", async () => {
      await eventually(async () => expect((await operator.probe("/readyz")).status).toBe(200));
      const started = Date.now();
      proxy.blackhole();
      const notReady = await eventually(async () => {
        const readyz = await operator.probe("/readyz?verbose");
        expect(readyz.status).toBe(500);
        expect(readyz.body).toMatch(/\[-\]api-server failed: no answer for \d+ s/);
        return Date.now() - started;
      }, { timeoutMs: 30_000 });
      expect((await operator.probe("/healthz")).status).toBe(200);
      const unhealthy = await eventually(async () => {
        const healthz = await operator.probe("/healthz?verbose");
        expect(healthz.status).toBe(500);
        expect(healthz.body).toMatch(/\[-\]api-server failed: no answer for \d+ s/);
        return Date.now() - started;
      }, { timeoutMs: UNHEALTHY_AFTER_MS + 30_000 });
      console.error(`    /readyz failed after ${notReady} ms, /healthz after ${unhealthy} ms`);
      expect(unhealthy).toBeGreaterThanOrEqual(UNHEALTHY_AFTER_MS);
      proxy.unblock();
      await eventually(async () => {
        expect((await operator.probe("/healthz")).status).toBe(200);
        expect((await operator.probe("/readyz")).status).toBe(200);
      }, { timeoutMs: CONVERGE_BOUND_MS });
      await eventually(() => expect(operator.leading).toBe(true), { timeoutMs: 30_000 });
      const took = await converges("late");
      console.error(`    and a change after it converged in ${took} ms`);
      expect(operator.exited).toBe(false);
    });
  } finally {
    operator.kill("SIGTERM");
    await operator.status;
    await proxy.close();
  }
});
