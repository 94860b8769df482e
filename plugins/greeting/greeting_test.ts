import { expect } from "expect";
import { CONFIG_MAP, NAMESPACE } from "../../mod.ts";
import { KubeClient, Manager } from "../../operator.ts";
import { eventually, integrationTest } from "../../testing/mod.ts";
import { GREETING, GREETING_CRD, greetingPlugin } from "./greeting.ts";

await integrationTest(
  "greeting plugin",
  { controllerManager: true, crds: [GREETING_CRD] },
  async (plane, step) => {
    const admin = plane.client();
    await admin.create(NAMESPACE, { metadata: { name: "hello" } });
    const client = new KubeClient(plane.adminConfig);
    const manager = new Manager({ client, plugins: [greetingPlugin] });
    const stop = new AbortController();
    const running = manager.run(stop.signal);
    try {
      await step("a Greeting gets its ConfigMap and a status", async () => {
        await admin.create(GREETING, {
          metadata: { name: "world", namespace: "hello" },
          spec: { message: "hi" },
        });
        const cm = await eventually(() =>
          admin.get(CONFIG_MAP, "world-greeting", { namespace: "hello" })
        );
        expect(cm.data).toEqual({ message: "hi" });
        await eventually(async () => {
          const greeting = await admin.get(GREETING, "world", { namespace: "hello" });
          expect(greeting.status?.configMap).toBe("world-greeting");
        });
      });
      await step("a new message reaches the ConfigMap", async () => {
        await admin.patch(GREETING, "world", { spec: { message: "hello again" } }, {
          namespace: "hello",
        });
        await eventually(async () => {
          const cm = await admin.get(CONFIG_MAP, "world-greeting", {
            namespace: "hello",
          });
          expect(cm.data).toEqual({ message: "hello again" });
        });
      });
    } finally {
      stop.abort();
      await running;
      client.close();
    }
  },
);
