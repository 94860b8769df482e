/**
 * What one idle watch costs the process, in three layers, against the harness's kube-apiserver:
 * Deno's own fetch stream (HTTP/2, `--per-client` 60 to a client), our Transport's stream (its connections,
 * health and owned chunks), and a client watch (its generators and parsing). Each layer, in a
 * process of its own (freed native memory would serve the next), opens N watches of ConfigMaps
 * in N empty namespaces and reports the heap and RSS they added, per watch, after a full GC.
 *
 *   deno run -A bench/stream_cost.ts [--watches 1800] [--per-client 60] [--layer "Deno fetch"]
 *
 * (each layer runs with the start task's V8 flags and malloc tunable, and --expose-gc)
 */
import { parseArgs } from "node:util";
import { KubeClient } from "../kube/client.ts";
import { CONFIG_MAP } from "../kube/kinds.ts";
import { setupLogging } from "../runtime/mod.ts";
import { ControlPlane } from "../testing/control_plane.ts";
import { sleep } from "../util/sleep.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    watches: { type: "string", default: "1800" },
    "per-client": { type: "string", default: "60" },
    layer: { type: "string" },
  },
});
const N = Number(values.watches);
const PER_CLIENT = Number(values["per-client"]);
const LAYERS = ["Deno fetch", "Transport stream", "client watch"];

if (values.layer === undefined) {
  // Each layer in a process of its own, with this one's flags.
  const rows: string[] = [];
  for (const layer of LAYERS) {
    const { stdout, success } = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "--v8-flags=--expose-gc,--max-semi-space-size=4,--heap-growing-percent=50,--no-turbofan",
        new URL(import.meta.url).pathname,
        `--watches=${N}`,
        `--per-client=${PER_CLIENT}`,
        `--layer=${layer}`,
      ],
      env: { GLIBC_TUNABLES: "glibc.malloc.arena_max=2" },
      stderr: "inherit",
    }).output();
    if (!success) throw new Error(`${layer} failed`);
    const row = JSON.parse(new TextDecoder().decode(stdout));
    rows.push(`| ${layer} | ${row.heapKiB} | ${row.rssKiB} |`);
  }
  console.log(`| ${N} idle watches, per watch | heap KiB | RSS KiB |\n| --- | --- | --- |`);
  console.log(rows.join("\n"));
  Deno.exit(0);
}
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --v8-flags=--expose-gc");
setupLogging({ level: "warning", format: "json" });

const memory = () => {
  gc();
  gc();
  const { heapUsed, rss } = Deno.memoryUsage();
  return { heap: heapUsed / 1024, rss: rss / 1024 };
};

const plane = await ControlPlane.start({ progress: () => {} });
try {
  const config = plane.adminConfig;
  const path = (i: number) =>
    `/api/v1/namespaces/ns-${i}/configmaps?watch=true&allowWatchBookmarks=true`;
  const layers: Record<string, (abort: AbortSignal) => Promise<() => void>> = {
    "Deno fetch": async (signal) => {
      const clients = Array.from(
        { length: Math.ceil(N / PER_CLIENT) },
        () =>
          Deno.createHttpClient({
            caCerts: [config.caData!],
            cert: config.clientCertData,
            key: config.clientKeyData,
          }),
      );
      for (const client of clients) {
        await (await fetch(`${plane.server}/version`, { client })).text();
      }
      for (let i = 0; i < N; i++) {
        fetch(`${plane.server}${path(i)}`, {
          client: clients[Math.floor(i / PER_CLIENT)],
          signal,
        })
          .then((r) =>
            r.body!.getReader({ mode: "byob" }).read(new Uint8Array(4096)).catch(() => {})
          )
          .catch(() => {});
      }
      return () => clients.forEach((client) => client.close());
    },
    "Transport stream": async (signal) => {
      const client = new KubeClient(config);
      await client.list(CONFIG_MAP, { namespace: "default" });
      for (let i = 0; i < N; i++) {
        client.transport.fetch(path(i), { method: "GET", timeoutMs: 0, stream: true, signal })
          .then((r) => r.body!.getReader().read().catch(() => {}))
          .catch(() => {});
      }
      return () => client.close();
    },
    "client watch": async (signal) => {
      const client = new KubeClient(config);
      await client.list(CONFIG_MAP, { namespace: "default" });
      for (let i = 0; i < N; i++) {
        (async () => {
          for await (const _ of client.watch(CONFIG_MAP, { namespace: `ns-${i}`, signal })) {
            // idle
          }
        })().catch(() => {});
      }
      return () => client.close();
    },
  };
  const open = layers[values.layer];
  if (!open) throw new Error(`--layer is one of ${LAYERS.join(", ")}`);
  await sleep(2_000);
  const before = memory();
  const abort = new AbortController();
  const close = await open(abort.signal);
  await sleep(8_000);
  const after = memory();
  const row = {
    heapKiB: Math.round((after.heap - before.heap) / N * 10) / 10,
    rssKiB: Math.round((after.rss - before.rss) / N * 10) / 10,
  };
  abort.abort();
  close();
  console.error(`bench: ${values.layer}: ${JSON.stringify(row)}`);
  console.log(JSON.stringify(row));
} finally {
  await plane.stop();
}
Deno.exit(0);
