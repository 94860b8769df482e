/**
 * The Deno side of `deno task bench:request-cost`, run with the start task's flags: what a GET over
 * HTTP/2 costs through Deno's `fetch` and through our client (`kube/`: its sender, counters and
 * parsing, without a rate limit), and what `JSON.parse` of one watch event costs. Prints one JSON
 * object: each row's CPU (user and system, every thread) per item, in microseconds.
 *
 *   deno run <start's flags> bench/request_cost_deno.ts KUBECONFIG PATH EVENT_FILE REQUESTS EVENTS CONCURRENCY
 */
import process from "node:process";
import { KubeClient, loadClusterConfig } from "../kube/mod.ts";

const [kubeconfig, path, eventFile, ...counts] = Deno.args;
const [requests, events, concurrency] = counts.map(Number);
const config = await loadClusterConfig({ kubeconfig });
const http = Deno.createHttpClient({
  caCerts: config.caData ? [config.caData] : [],
  cert: config.clientCertData,
  key: config.clientKeyData,
});
const ours = new KubeClient(config);
const event = await Deno.readTextFile(eventFile);

/** Runs `work` `n` times from `parallel` callers; the process's CPU microseconds per call. */
async function perItem(n: number, parallel: number, work: () => unknown): Promise<number> {
  const start = process.cpuUsage();
  let next = 0;
  await Promise.all(Array.from({ length: parallel }, async () => {
    while (next++ < n) await work();
  }));
  const { user, system } = process.cpuUsage(start);
  return (user + system) / n;
}

async function viaFetch(): Promise<unknown> {
  const response = await fetch(config.server + path, {
    client: http,
    headers: { accept: "application/json" },
  });
  if (!response.ok) throw new Error(`GET ${path}: ${response.status} ${await response.text()}`);
  return await response.json();
}
const viaOurs = () => ours.request("GET", path);
const parse = () => JSON.parse(event);

// Warm: the connection, the pools, the code paths.
await perItem(requests / 10 + 1, concurrency, viaFetch);
await perItem(requests / 10 + 1, concurrency, viaOurs);
await perItem(events / 10 + 1, 1, parse);
console.log(JSON.stringify({
  fetch: await perItem(requests, concurrency, viaFetch),
  client: await perItem(requests, concurrency, viaOurs),
  parse: await perItem(events, 1, parse),
}));
ours.close();
http.close();
