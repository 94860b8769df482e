/**
 * The process `bench/http_memory.ts` measures: the operator's HTTP servers alone (webhooks over
 * HTTPS with a validating plugin, probes over HTTP), on the servers' own code and limits, without
 * a cluster. Says its ports on its first line of stdout, then its memory as V8 sees it (JSON)
 * every 250 ms. Reads the certificate and key from the files named by its two arguments.
 */
import type { KubeClient } from "../kube/client.ts";
import { CONFIG_MAP } from "../kube/kinds.ts";
import { Store } from "../runtime/cache/mod.ts";
import { HttpServer, log, Probes } from "../runtime/observe/mod.ts";
import { definePlugin } from "../runtime/plugin/mod.ts";
import { WebhookServer } from "../runtime/webhooks/mod.ts";

const [cert, key] = await Promise.all(Deno.args.slice(0, 2).map((p) => Deno.readTextFile(p)));
const webhooks = new WebhookServer({
  bind: { hostname: "127.0.0.1", port: 0 },
  plugins: [definePlugin({
    name: "configmaps",
    for: CONFIG_MAP,
    reconcile: () => {},
    validate: () => ({}),
  })],
  certificate: () => Promise.resolve({ cert, key }),
  context: {
    client: {} as KubeClient,
    cache: (resource) => new Store(resource),
    installed: () => true,
    log: log("webhooks"),
  },
  // One process holds every connection here: the per-caller cap is the total's.
  limits: { maxConnectionsPerCaller: 256 },
  log: log("webhooks"),
});
await webhooks.start();
const probes = new Probes();
probes.register({ healthz: { ping: () => undefined } });
const probeServer = new HttpServer({
  name: "probes",
  bind: { hostname: "127.0.0.1", port: 0 },
  routes: probes.routes(),
  log: log("probes"),
});
await probeServer.start();
console.log(JSON.stringify({ webhooks: webhooks.port, probes: probeServer.port }));
setInterval(() => {
  const { rss, heapUsed, heapTotal, external } = Deno.memoryUsage();
  const open = webhooks.http.connections.open + probeServer.connections.open;
  console.log(JSON.stringify({ rss, heapUsed, heapTotal, external, open }));
}, 250);
