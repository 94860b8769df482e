/** The operator process rides out a kube-apiserver restart: watches resume, work done meanwhile is caught up. */
import { expect } from "expect";
import { CONFIG_MAP, NAMESPACE } from "../kube/kinds.ts";
import { kubeconfigYaml } from "../kube/kubeconfig_yaml.ts";
import { eventually } from "../testing/eventually.ts";
import { integrationTest } from "../testing/integration_test_case.ts";
import { TcpProxy } from "../testing/tcp_proxy.ts";
import { CONFIG_SET, CONFIG_SET_CRD } from "./fixtures/config_set.ts";
import { OperatorProcess } from "./fixtures/operator_process.ts";

await integrationTest("runtime survives an API server restart", {
  crds: [CONFIG_SET_CRD],
}, async (plane, step) => {
  const admin = plane.client();
  await admin.create(NAMESPACE, { metadata: { name: "restart" } });
  // Through a proxy, so the change below is surely made while the operator cannot see it.
  const proxy = new TcpProxy({ hostname: "127.0.0.1", port: Number(new URL(plane.server).port) });
  const kubeconfig = `${plane.dir}/via-proxy.kubeconfig`;
  await Deno.writeTextFile(
    kubeconfig,
    kubeconfigYaml({ ...plane.adminConfig, server: `https://127.0.0.1:${proxy.port}` }),
  );
  const operator = OperatorProcess.start(
    kubeconfig,
    "restart",
    `${plane.dir}/operator-restart.log`,
  );
  const exited = { yet: false };
  operator.status.then(() => (exited.yet = true));
  const child = (name: string) => admin.get(CONFIG_MAP, name, { namespace: "restart" });

  try {
    await step("converges before the restart", async () => {
      await eventually(() => expect(operator.leading).toBe(true), { timeoutMs: 60_000 });
      await admin.create(CONFIG_SET, {
        metadata: { name: "before", namespace: "restart" },
        spec: { entries: { k: "1" } },
      });
      await eventually(() => child("before-k"));
    });

    await step(
      "a change made while it was cut off and the API server restarted is reconciled",
      async () => {
        proxy.block();
        await plane.restartApiServer();
        await admin.create(CONFIG_SET, {
          metadata: { name: "during", namespace: "restart" },
          spec: { entries: { k: "2" } },
        });
        await admin.patch(CONFIG_MAP, "before-k", { data: { value: "drifted" } }, {
          namespace: "restart",
        });
        proxy.unblock();
        await eventually(async () => expect((await child("during-k")).data?.value).toBe("2"), {
          timeoutMs: 90_000,
        });
        await eventually(async () => expect((await child("before-k")).data?.value).toBe("1"), {
          timeoutMs: 90_000,
        });
      },
    );

    await step("the process never restarted", () => {
      expect(exited.yet).toBe(false);
      expect(operator.events.filter((e) => e.event === "started")).toHaveLength(1);
    });
  } finally {
    operator.kill("SIGTERM");
    await operator.status;
    await proxy.close();
  }
});
