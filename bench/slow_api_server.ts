/**
 * `deno task bench:latency`: how slow an API server the operator rides out. The real operator
 * (leader election on, default timings) reaches the harness's control plane through a proxy that
 * holds every answer back by a fixed latency; for each latency, edits are made one after another
 * and timed until the Module shows them, and the run reports how often the leader lost its lease
 * and how many new connections it opened. Not a test: its numbers are the machine's.
 *
 *   deno task bench:latency [--latency 3000,4500,5000] [--seconds 60] [--out file.json]
 */
import { parseArgs } from "node:util";
import { KMM_MODULE_CRD_FILE, MODULE } from "../crds/kmm_module.ts";
import { PTEMPLATE } from "../crds/ptemplate.ts";
import { NAMESPACE } from "../kube/kinds.ts";
import { kubeconfigYaml } from "../kube/kubeconfig_yaml.ts";
import { ControlPlane } from "../testing/control_plane.ts";
import { TcpProxy } from "../testing/tcp_proxy.ts";
import { OperatorRun } from "../tests/fixtures/operator_command.ts";
import { sleep } from "../util/sleep.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    latency: { type: "string", default: "3000,4500,5000" },
    seconds: { type: "string", default: "60" },
    out: { type: "string" },
  },
});
const LATENCIES = values.latency.split(",").map(Number);
const SECONDS = Number(values.seconds);
const NS = "slow";
const say = (line: string) => console.error(`bench: ${line}`);

interface Result {
  latencyMs: number;
  edits: number;
  /** Edits not shown on their Module within a minute. */
  lost: number;
  convergedMs: { min: number; max: number };
  /** Times the leader lost its lease (stopped all work, campaigned again). */
  leaseLost: number;
  newConnections: number;
}

async function measure(latencyMs: number): Promise<Result> {
  const plane = await ControlPlane.start({
    crds: [new URL("../crds/ptemplates.pt.example.com.yaml", import.meta.url), KMM_MODULE_CRD_FILE],
  });
  const proxy = new TcpProxy({ hostname: "127.0.0.1", port: Number(new URL(plane.server).port) });
  const kubeconfig = `${plane.dir}/via-proxy.kubeconfig`;
  await Deno.writeTextFile(
    kubeconfig,
    kubeconfigYaml({ ...plane.adminConfig, server: `https://127.0.0.1:${proxy.port}` }),
  );
  const operator = OperatorRun.start([
    `--kubeconfig=${kubeconfig}`,
    "--leader-elect",
    "--leader-election-namespace=default",
    "--metrics-bind-address=0",
    "--health-probe-bind-address=0",
    "--webhook-bind-address=0",
  ]);
  try {
    const admin = plane.client();
    await admin.create(NAMESPACE, { metadata: { name: NS } });
    await admin.create(PTEMPLATE, {
      metadata: { name: "pt", namespace: NS },
      spec: { maxdev: 1, selector: { pool: "slow" } },
    });
    const shows = async (maxdev: number) => {
      const module = await admin.get(MODULE, "pt", { namespace: NS }).catch(() => undefined);
      return module?.spec.moduleLoader.container.modprobe.parameters?.includes(`max_dev=${maxdev}`);
    };
    while (!(await shows(1))) await sleep(200);
    const accepted = proxy.accepted;
    proxy.slow({ minMs: latencyMs, maxMs: latencyMs });
    const took: number[] = [];
    let lost = 0;
    const started = Date.now();
    for (let maxdev = 2; Date.now() - started < SECONDS * 1000; maxdev++) {
      const edited = Date.now();
      await admin.patch(PTEMPLATE, "pt", { spec: { maxdev } }, { namespace: NS });
      while (!(await shows(maxdev)) && Date.now() - edited < 60_000) await sleep(200);
      if (await shows(maxdev)) took.push(Date.now() - edited);
      else lost++;
    }
    return {
      latencyMs,
      edits: took.length,
      lost,
      convergedMs: { min: Math.min(...took), max: Math.max(...took) },
      leaseLost: operator.lines.filter((l) => /^lost lease/.test(l.msg)).length,
      newConnections: proxy.accepted - accepted,
    };
  } finally {
    await operator.stop();
    await proxy.close();
    await plane.stop();
  }
}

const results: Result[] = [];
for (const latency of LATENCIES) {
  say(`${latency} ms on every answer, for ${SECONDS} s`);
  const result = await measure(latency);
  say(JSON.stringify(result));
  results.push(result);
}
console.log(
  [
    "latency per answer | edits | not applied | each applied in | leases lost | new connections",
    ...results.map((r) =>
      `${r.latencyMs} ms | ${r.edits} | ${r.lost} | ${r.convergedMs.min}–${r.convergedMs.max} ms | ` +
      `${r.leaseLost} | ${r.newConnections}`
    ),
  ].join("\n"),
);
if (values.out) {
  await Deno.writeTextFile(
    values.out,
    JSON.stringify(
      { command: `deno task bench:latency ${Deno.args.join(" ")}`, results },
      null,
      2,
    ) +
      "\n",
  );
}
