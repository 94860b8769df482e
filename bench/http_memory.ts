/**
 * `deno task bench:http-memory`: where the memory of the operator's HTTP servers goes under a
 * flood, and what stays after it. The servers run alone in a process of their own
 * (`http_memory_server.ts`), with the start task's V8 flags and malloc arenas; the flood comes
 * from this process. Each row is that process's resident memory split three ways: what V8 holds
 * (heap, and `external`: ArrayBuffers such as the front's buffers), what malloc holds (`[heap]`,
 * the main arena, where Deno's I/O on the main thread allocates; `anon`, other anonymous
 * mappings: V8's pages, thread arenas), and the pages of the deno executable the flood's code
 * paths touched. Rows: the baseline (after a warm-up), the peak, the end of the flood, and 5, 15
 * and 30 s after it. Not a test: the numbers are the machine's as much as ours.
 *
 *   deno task bench:http-memory [--shape refused|http2|churn|connections|connections-http2|
 *     connections-headers] [--seconds 30] [--connections 250] [--settle 20] [--after 5,15,30]
 *     [--out bench/results/http-memory-refused.json]
 *
 * `refused`: 50 connections pipelining refused reviews and unknown paths over HTTP/1.1.
 * `http2`: the same from 50 `fetch` callers sharing one HTTP/2 connection. `churn`: 50 callers
 * with a new TLS connection for every request. `connections`, `connections-http2`: that many
 * connections opened and held for `--seconds`, then closed: what one connection costs.
 * `connections-headers`: that many HTTP/1.1 connections each sending 64 KiB of headers it never
 * ends, held for up to 20 s (the request deadline is 30 s). `--settle`: seconds between the
 * warm-up and the baseline; `--after`: the rows after the flood, in seconds.
 */
import { parseArgs } from "node:util";
import { createServingPki } from "../testing/control_plane_pki.ts";
import { flood, type FloodGroup } from "../tests/fixtures/http_flood.ts";
import { permissionFlags, taskEnv } from "../tests/fixtures/operator_command.ts";
import { sleep } from "../util/sleep.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    shape: { type: "string", default: "refused" },
    seconds: { type: "string", default: "30" },
    connections: { type: "string", default: "250" },
    settle: { type: "string", default: "20" },
    after: { type: "string", default: "5,15,30" },
    out: { type: "string" },
  },
});
const shape = values.shape;
const seconds = Number(values.seconds);
const MIB = 1024 * 1024;

const pki = await createServingPki();
const dir = await Deno.makeTempDir({ prefix: "http-memory-" });
const { cert, key } = await pki.issue();
await Deno.writeTextFile(`${dir}/tls.crt`, cert);
await Deno.writeTextFile(`${dir}/tls.key`, key);
const server = new Deno.Command(Deno.execPath(), {
  args: [
    "run",
    ...permissionFlags("start"),
    new URL("./http_memory_server.ts", import.meta.url).pathname,
    `${dir}/tls.crt`,
    `${dir}/tls.key`,
  ],
  env: taskEnv("start"),
  stdout: "piped",
  stderr: "null",
}).spawn();

interface V8Memory {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  open: number;
}
let latest: V8Memory | undefined;
let peak = 0;
let mostOpen = 0;
const ports = await new Promise<{ webhooks: number; probes: number }>((resolve) => {
  (async () => {
    let buffered = "";
    for await (const chunk of server.stdout.pipeThrough(new TextDecoderStream())) {
      buffered += chunk;
      const lines = buffered.split("\n");
      buffered = lines.pop()!;
      for (const line of lines) {
        const parsed = JSON.parse(line);
        if ("webhooks" in parsed) resolve(parsed);
        else {
          latest = parsed;
          peak = Math.max(peak, parsed.rss);
          mostOpen = Math.max(mostOpen, parsed.open);
        }
      }
    }
  })();
});

/** Resident memory by kind of mapping, from /proc (through `cat`: Deno reads /proc only with -A). */
async function mappings(pid: number): Promise<Record<string, number>> {
  const out = await new Deno.Command("cat", { args: [`/proc/${pid}/smaps`], stdout: "piped" })
    .output();
  const kinds: Record<string, number> = { "[heap]": 0, anon: 0, binary: 0, other: 0 };
  let kind = "other";
  for (const line of new TextDecoder().decode(out.stdout).split("\n")) {
    const mapping = line.match(/^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/);
    if (mapping) {
      const name = mapping[1];
      kind = name === "[heap]"
        ? "[heap]"
        : name === ""
        ? "anon"
        : name === Deno.execPath()
        ? "binary"
        : "other";
      continue;
    }
    const rss = line.match(/^Rss:\s+(\d+) kB/);
    if (rss) kinds[kind] += Number(rss[1]) * 1024;
  }
  return kinds;
}

interface Row {
  when: string;
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  open: number;
  mappings: Record<string, number>;
}
const rows: Row[] = [];
async function row(when: string, rss?: number): Promise<void> {
  await sleep(300); // a fresh report from the server
  const memory = latest!;
  rows.push({ when, ...memory, rss: rss ?? memory.rss, mappings: await mappings(server.pid) });
}

const webhooks = `https://127.0.0.1:${ports.webhooks}`;
const tls = () =>
  Deno.connectTls({
    hostname: "127.0.0.1",
    port: ports.webhooks,
    caCerts: [pki.ca.cert],
    alpnProtocols: ["http/1.1"],
  });
const unknown = () => `/${crypto.randomUUID()}/${crypto.randomUUID()}`;
const review = "/validate/configmaps";
const clients: Deno.HttpClient[] = [];
const client = (options: Deno.CreateHttpClientOptions) => {
  const made = Deno.createHttpClient({ caCerts: [pki.ca.cert], ...options });
  clients.push(made);
  return made;
};
const fetchShapes = [
  { base: webhooks, method: "POST", path: review, body: "{}" },
  { base: webhooks, method: "GET", path: unknown },
] as const;
const floods: Record<string, () => FloodGroup[]> = {
  refused: () => [{
    workers: 50,
    connect: tls,
    requests: [
      () => `POST ${review} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}`,
      () => `GET ${unknown()} HTTP/1.1\r\nHost: x\r\n\r\n`,
    ],
    batch: 32,
  }],
  http2: () => [{ workers: 50, client: client({ http1: false }), shapes: [...fetchShapes] }],
  churn: () => [{
    workers: 50,
    client: client({ http2: false, poolMaxIdlePerHost: 0 }),
    shapes: [...fetchShapes],
  }],
};

/** Opens `count` connections that each send 64 KiB of headers and never end them; keeps them. */
async function holdHeaders(count: number, ms: number): Promise<void> {
  const held: Deno.Conn[] = [];
  const line = new TextEncoder().encode(`x-pad: ${"a".repeat(4088)}\r\n`);
  for (let i = 0; i < count; i++) {
    const conn = await tls();
    held.push(conn);
    (async () => {
      await conn.write(new TextEncoder().encode(`POST ${review} HTTP/1.1\r\nHost: x\r\n`));
      for (let k = 0; k < 16; k++) await conn.write(line);
    })().catch(() => {});
  }
  await sleep(ms);
  for (const conn of held) {
    try {
      conn.close();
    } catch {
      // closed by the server
    }
  }
}

/** Opens `count` connections, each answered once, and keeps them for `ms`. */
async function hold(count: number, http2: boolean, ms: number): Promise<void> {
  const held: Deno.HttpClient[] = [];
  for (let i = 0; i < count; i++) {
    // One client a connection: a client of its own keeps each connection apart.
    const one = Deno.createHttpClient({ caCerts: [pki.ca.cert], http1: !http2, http2 });
    held.push(one);
    const response = await fetch(`${webhooks}${unknown()}`, { client: one });
    await response.body?.cancel();
  }
  await sleep(ms);
  for (const one of held) one.close();
}

try {
  // Warm up: the code of TLS, both HTTP versions and each answer paged in before the baseline.
  await flood(
    Object.values(floods).map((group) => ({ ...group()[0], workers: 1 })),
    performance.now() + 1_500,
  );
  await hold(4, false, 0);
  await hold(4, true, 0);
  // Long enough for V8's memory reducer to collect the warm-up's garbage and give pages back.
  await sleep(Number(values.settle) * 1000);
  await row("baseline");
  peak = 0;
  mostOpen = 0;
  const started = performance.now();
  let requests = "";
  if (shape === "connections-headers") {
    // Within the request deadline (30 s), or the server ends them first.
    await holdHeaders(Number(values.connections), Math.min(seconds, 20) * 1000);
    requests = `${values.connections} connections with unfinished headers`;
  } else if (shape === "connections" || shape === "connections-http2") {
    await hold(Number(values.connections), shape === "connections-http2", seconds * 1000);
    requests = `${values.connections} connections`;
  } else {
    const groups = floods[shape]?.();
    if (!groups) throw new TypeError(`--shape ${shape}: one of ${Object.keys(floods)}`);
    const counts = await flood(groups, started + seconds * 1000);
    const total = [...counts.statuses.values()].reduce((a, b) => a + b, 0);
    requests = `${total} requests (${(total / seconds).toFixed(0)}/s) ` +
      JSON.stringify(Object.fromEntries(counts.statuses));
  }
  const floodPeak = peak;
  const floodOpen = mostOpen;
  await row("end of flood");
  rows.splice(1, 0, { ...rows[1], when: "peak", rss: floodPeak, open: floodOpen });
  const ended = performance.now();
  for (const after of values.after.split(",").map(Number)) {
    await sleep(Math.max(0, ended + after * 1000 - performance.now()));
    await row(`${after} s after`);
  }
  const base = rows[0];
  const mib = (bytes: number) => (bytes / MIB).toFixed(1).padStart(6);
  const delta = (bytes: number, from: number) => {
    const d = (bytes - from) / MIB;
    return `${d >= 0 ? "+" : ""}${d.toFixed(1)}`.padStart(7);
  };
  console.log(`${shape}: ${requests}; at most ${floodOpen} connections open at once`);
  console.log(
    "                rss (MiB)      heap used/total  external  [heap] malloc      anon    binary",
  );
  for (const r of rows) {
    console.log(
      `${r.when.padEnd(13)} ${mib(r.rss)} ${delta(r.rss, base.rss)}  ${mib(r.heapUsed)}/${
        mib(r.heapTotal)
      }  ${mib(r.external)}   ${delta(r.mappings["[heap]"], base.mappings["[heap]"])}   ${
        delta(r.mappings.anon, base.mappings.anon)
      }   ${delta(r.mappings.binary, base.mappings.binary)}`,
    );
  }
  if (values.out) {
    const result = {
      shape,
      seconds,
      requests,
      v8Flags: permissionFlags("start").filter((f) => f.startsWith("--v8-flags")),
      env: taskEnv("start"),
      rows,
    };
    await Deno.writeTextFile(values.out, JSON.stringify(result, null, 2) + "\n");
  }
} finally {
  for (const made of clients) made.close();
  server.kill();
  await server.status;
  await Deno.remove(dir, { recursive: true });
}
